/* Runs a kernel launch on the CPU: blocks one after the other, each block's
 * threads as fibers on the calling OS thread. A thread runs until it reaches a
 * scheduling point (__syncthreads, a warp shuffle or vote, its end); a
 * barrier lets its threads go only when every thread of the block (or every
 * lane of the mask) has arrived, so code that forgets a barrier reads
 * another thread's stale or NaN data. SAYWHO_CUDA_EMU_REVERSE=1 runs the
 * threads (and blocks) in reverse order between barriers, which exposes the
 * barriers that forward order happens to make unnecessary.
 *
 * A fault (a barrier some threads skip, a shuffle whose lanes never meet, too
 * much shared memory, a bad launch configuration) stops the launch and is
 * what cudaGetLastError returns right after it, with a sentence naming the
 * kernel, the block, the thread and the source line. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <memory>

#include "emu_fiber.h"
#include "emu_errors.h"
#include "emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define SW_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_EMU_ASAN 1
#endif
#endif

#ifdef SW_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
/* ASan's frames are larger, and it must be told about every stack switch. */
#define LANE_STACK (256u << 10)
#else
#define LANE_STACK (64u << 10)
#endif
#define GUARD            4096u
#define MAX_THREADS      1024
#define MAX_WARPS        (MAX_THREADS / 32)
#define SHARED_LIMIT     (48u << 10) /* per block, without the opt-in attribute */
#define MAX_SHARED_DECLS 32

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

namespace
{

enum { RUN, WAIT_BLOCK, WAIT_WARP, DONE };

struct Lane {
    sw_fiber_ctx ctx;
    int state;
    unsigned syncs; /* warp exchanges done: picks the exchange's buffer */
    unsigned mask;
    const char *what, *file;
    int line;
    void *fake_stack;
};

struct SharedDecl {
    const void *key;
    void *ptr;
};

struct Sched {
    char *stacks[MAX_THREADS]; /* mmap'd once, reused by every launch */
    Lane lanes[MAX_THREADS];
    int n, cur, reverse;
    sw_fiber_ctx home;
    void *home_fake;
    const void *home_bottom;
    size_t home_size;
    void (*body)(void *);
    void *body_ctx;
    const char *kernel;
    /* the block barrier */
    int at_barrier, done;
    const char *bar_file;
    int bar_line;
    /* warp exchanges: arrivals and two buffers of values per warp */
    unsigned arrived[MAX_WARPS];
    uint64_t slots[MAX_WARPS][2][32];
    /* shared memory of the running block */
    SharedDecl decls[MAX_SHARED_DECLS];
    int n_decls;
    size_t static_bytes, dynamic_bytes;
    void *dynamic;
    int faulted;
    char why[600];
};

pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER; /* one launch at a time */
Sched S;

unsigned lane_of(int i)
{
    return (unsigned)i & 31u;
}

uint3 coords(int i)
{
    uint3 t;
    t.x = (unsigned)i % blockDim.x;
    t.y = (unsigned)i / blockDim.x % blockDim.y;
    t.z = (unsigned)i / (blockDim.x * blockDim.y);
    return t;
}

void describe(char *buf, size_t len, int i)
{
    uint3 t = coords(i);
    snprintf(buf, len, "block (%u,%u,%u) thread (%u,%u,%u)", blockIdx.x, blockIdx.y, blockIdx.z,
             t.x, t.y, t.z);
}

void record_fault(int lane, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void record_fault(int lane, const char *fmt, ...)
{
    if (S.faulted)
        return;
    S.faulted = 1;
    char where[96];
    describe(where, sizeof where, lane);
    char msg[420];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(S.why, sizeof S.why, "kernel %s, %s: %s", S.kernel, where, msg);
}

/* The running lane gives control back to the scheduler; `final` when it has
 * ended or faulted and must never run again. */
void yield_home(bool final)
{
    Lane *l = &S.lanes[S.cur];
#ifdef SW_EMU_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : &l->fake_stack, S.home_bottom, S.home_size);
#else
    (void) final;
#endif
    sw_fiber_swap(&l->ctx, &S.home);
#ifdef SW_EMU_ASAN
    __sanitizer_finish_switch_fiber(l->fake_stack, NULL, NULL);
#endif
}

[[noreturn]] void fault_here(void)
{
    yield_home(true);
    abort(); /* never resumed */
}

void lane_main(void *unused)
{
    (void)unused;
#ifdef SW_EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &S.home_bottom, &S.home_size);
#endif
    S.body(S.body_ctx);
    S.lanes[S.cur].state = DONE;
    S.done++;
    if (S.at_barrier > 0 && S.at_barrier + S.done == S.n)
        record_fault(S.cur,
                     "__syncthreads at %s:%d is reached by %d of the block's %d threads; the "
                     "others returned before it",
                     S.bar_file, S.bar_line, S.at_barrier, S.n);
    yield_home(true);
    abort(); /* never resumed */
}

void resume(int i)
{
    S.cur = i;
    threadIdx = coords(i);
#ifdef SW_EMU_ASAN
    __sanitizer_start_switch_fiber(&S.home_fake, S.stacks[i] + GUARD, LANE_STACK);
#endif
    sw_fiber_swap(&S.home, &S.lanes[i].ctx);
#ifdef SW_EMU_ASAN
    __sanitizer_finish_switch_fiber(S.home_fake, NULL, NULL);
#endif
}

int ensure_stacks(int n)
{
    for (int i = 0; i < n; i++) {
        if (S.stacks[i])
            continue;
        void *p = mmap(NULL, GUARD + LANE_STACK, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return -1;
        mprotect(p, GUARD, PROT_NONE); /* a stack overflow faults instead of corrupting */
        S.stacks[i] = (char *)p;
    }
    return 0;
}

void free_shared(void)
{
    for (int d = 0; d < S.n_decls; d++)
        free(S.decls[d].ptr);
    S.n_decls = 0;
    S.static_bytes = 0;
    free(S.dynamic);
    S.dynamic = NULL;
}

/* Nothing can run and not every thread has ended: say who waits where. */
void diagnose_stall(void)
{
    for (int i = 0; i < S.n; i++) {
        const Lane *l = &S.lanes[i];
        if (l->state == WAIT_WARP) {
            int base = i & ~31;
            unsigned missing = l->mask & ~S.arrived[i >> 5];
            int m = missing ? base + __builtin_ctz(missing) : i;
            const char *where = S.lanes[m].state == DONE         ? "returned"
                                : S.lanes[m].state == WAIT_BLOCK ? "waits at __syncthreads"
                                                                 : "waits elsewhere";
            record_fault(i, "%s at %s:%d with mask 0x%08x never completes: lane %d of the warp %s",
                         l->what, l->file, l->line, l->mask, m - base, where);
            return;
        }
    }
    record_fault(0, "the block's threads wait for each other forever");
}

void run_block(void)
{
    for (int i = 0; i < S.n; i++) {
        Lane *l = &S.lanes[i];
        sw_fiber_make(&l->ctx, S.stacks[i] + GUARD, LANE_STACK, lane_main, NULL);
        l->state = RUN;
        l->syncs = 0;
        l->fake_stack = NULL;
    }
    memset(S.arrived, 0, sizeof S.arrived);
    S.at_barrier = S.done = 0;
    S.dynamic = malloc(S.dynamic_bytes ? S.dynamic_bytes : 1);
    if (S.dynamic)
        memset(S.dynamic, 0xff, S.dynamic_bytes); /* NaN until written */
    else
        record_fault(0, "out of host memory for %zu bytes of shared memory", S.dynamic_bytes);
    while (!S.faulted && S.done < S.n) {
        int ran = 0;
        for (int k = 0; k < S.n && !S.faulted; k++) {
            int i = S.reverse ? S.n - 1 - k : k;
            if (S.lanes[i].state == RUN) {
                resume(i);
                ran++;
            }
        }
        if (!ran && !S.faulted && S.done < S.n)
            diagnose_stall();
    }
    free_shared();
#ifdef SW_EMU_ASAN
    /* Threads stopped mid-way leave their frames' redzones poisoned; the next
     * launch reuses these stacks. */
    if (S.faulted)
        for (int i = 0; i < S.n; i++)
            __asan_unpoison_memory_region(S.stacks[i] + GUARD, LANE_STACK);
#endif
}

cudaError_t check_config(dim3 grid, dim3 block, size_t shared)
{
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (!grid.x || !grid.y || !grid.z || !threads || block.x > 1024 || block.y > 1024 ||
        block.z > 64 || threads > MAX_THREADS || grid.x > 0x7fffffffu || grid.y > 65535 ||
        grid.z > 65535) {
        sw_emu_set_error(cudaErrorInvalidConfiguration,
                         "kernel %s: grid (%u,%u,%u) of blocks (%u,%u,%u) is outside CUDA's "
                         "limits (blocks of at most 1024 threads, grid.y and grid.z at most "
                         "65535)",
                         S.kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return cudaErrorInvalidConfiguration;
    }
    if (shared > SHARED_LIMIT) {
        sw_emu_set_error(cudaErrorInvalidValue,
                         "kernel %s: %zu bytes of dynamic shared memory, above the %u a block "
                         "may have",
                         S.kernel, shared, SHARED_LIMIT);
        return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

} // namespace

/* SAYWHO_CUDA_EMU_BREAK=name[,name...]: those kernels (or "sgemm", cuBLAS)
 * do nothing, a stand-in for a GPU that computes wrong, so tests can prove
 * that the self-check catches it and device="auto" falls back. */
int sw_emu_broken(const char *kernel)
{
    const char *list = getenv("SAYWHO_CUDA_EMU_BREAK");
    size_t len = strlen(kernel);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, kernel, n) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static void run_grid(const char *kernel, dim3 grid, dim3 block, size_t shared, void (*body)(void *),
                     void *ctx);

void sw_emu_launch_grid(const char *kernel, dim3 grid, dim3 block, size_t shared,
                        cudaStream_t stream, void (*body)(void *), void *ctx,
                        void *(*clone)(const void *), void (*drop)(void *))
{
    if (!sw_emu_capturing(stream)) { /* every stream is the host's program order */
        run_grid(kernel, grid, block, shared, body, ctx);
        return;
    }
    /* Captured: a bad shape is refused now, as a GPU refuses it at the launch;
     * the kernel and a copy of its arguments wait for cudaGraphLaunch. */
    pthread_mutex_lock(&launch_lock);
    S.kernel = kernel;
    cudaError_t e = check_config(grid, block, shared);
    pthread_mutex_unlock(&launch_lock);
    if (e != cudaSuccess)
        return;
    std::shared_ptr<void> args(clone(ctx), drop);
    sw_emu_record(stream, [=]() { run_grid(kernel, grid, block, shared, body, args.get()); });
}

static void run_grid(const char *kernel, dim3 grid, dim3 block, size_t shared, void (*body)(void *),
                     void *ctx)
{
    pthread_mutex_lock(&launch_lock);
    S.kernel = kernel;
    S.faulted = 0;
    const char *rev = getenv("SAYWHO_CUDA_EMU_REVERSE");
    S.reverse = rev && *rev && strcmp(rev, "0") != 0;
    if (check_config(grid, block, shared) != cudaSuccess) {
        pthread_mutex_unlock(&launch_lock);
        return;
    }
    if (sw_emu_broken(kernel)) {
        pthread_mutex_unlock(&launch_lock);
        return;
    }
    S.n = (int)(block.x * block.y * block.z);
    if (ensure_stacks(S.n) != 0) {
        sw_emu_set_error(cudaErrorLaunchOutOfResources, "kernel %s: no memory for %d fiber stacks",
                         kernel, S.n);
        pthread_mutex_unlock(&launch_lock);
        return;
    }
    S.body = body;
    S.body_ctx = ctx;
    S.dynamic_bytes = shared;
    blockDim = block;
    gridDim = grid;
    sw_emu_count_launch(kernel, grid, block, shared);
    unsigned long long total = (unsigned long long)grid.x * grid.y * grid.z;
    for (unsigned long long b = 0; b < total && !S.faulted; b++) {
        unsigned long long id = S.reverse ? total - 1 - b : b;
        blockIdx.x = (unsigned)(id % grid.x);
        blockIdx.y = (unsigned)(id / grid.x % grid.y);
        blockIdx.z = (unsigned)(id / ((unsigned long long)grid.x * grid.y));
        run_block();
    }
    if (S.faulted)
        sw_emu_set_error(cudaErrorLaunchFailure, "%s", S.why);
    pthread_mutex_unlock(&launch_lock);
}

void sw_emu_syncthreads(const char *file, int line)
{
    Lane *l = &S.lanes[S.cur];
    if (S.at_barrier == 0) {
        S.bar_file = file;
        S.bar_line = line;
    } else if (line != S.bar_line || (file != S.bar_file && strcmp(file, S.bar_file) != 0)) {
        record_fault(S.cur,
                     "threads wait at different barriers: __syncthreads at %s:%d and at %s:%d",
                     file, line, S.bar_file, S.bar_line);
        fault_here();
    }
    l->state = WAIT_BLOCK;
    if (++S.at_barrier + S.done == S.n) {
        if (S.done > 0) {
            record_fault(S.cur,
                         "__syncthreads at %s:%d is reached by %d of the block's %d threads; the "
                         "others returned before it",
                         file, line, S.at_barrier, S.n);
            fault_here();
        }
        for (int i = 0; i < S.n; i++)
            S.lanes[i].state = RUN;
        S.at_barrier = 0;
    }
    /* Even the last to arrive yields, so every thread's next stretch runs in
     * the scheduler's order (forward or reverse). */
    yield_home(false);
}

const uint64_t *sw_emu_warp_exchange(unsigned mask, uint64_t value, const char *what,
                                     const char *file, int line)
{
    int i = S.cur, warp = i >> 5, base = i & ~31;
    unsigned lane = lane_of(i);
    Lane *l = &S.lanes[i];
    int in_warp = S.n - base < 32 ? S.n - base : 32;
    if (!(mask >> lane & 1u)) {
        record_fault(i, "%s at %s:%d: lane %u calls it with mask 0x%08x, which leaves it out", what,
                     file, line, lane, mask);
        fault_here();
    }
    if (in_warp < 32 && (mask >> in_warp) != 0) {
        record_fault(i, "%s at %s:%d: mask 0x%08x names lanes beyond the block's last thread", what,
                     file, line, mask);
        fault_here();
    }
    int buf = (int)(l->syncs++ & 1u);
    S.slots[warp][buf][lane] = value;
    l->mask = mask;
    l->what = what;
    l->file = file;
    l->line = line;
    S.arrived[warp] |= 1u << lane;
    if ((S.arrived[warp] & mask) == mask) {
        for (int j = 0; j < 32; j++) {
            if (!(mask >> j & 1u))
                continue;
            Lane *o = &S.lanes[base + j];
            if (o->mask != mask) {
                record_fault(i,
                             "lanes meet with different masks: %s at %s:%d with 0x%08x, %s at "
                             "%s:%d with 0x%08x",
                             what, file, line, mask, o->what, o->file, o->line, o->mask);
                fault_here();
            }
            o->state = RUN;
        }
        S.arrived[warp] &= ~mask;
        return S.slots[warp][buf]; /* the last to arrive goes on at once */
    }
    l->state = WAIT_WARP;
    yield_home(false);
    return S.slots[warp][buf];
}

unsigned sw_emu_lane(void)
{
    return lane_of(S.cur);
}

unsigned sw_emu_active_lanes(void)
{
    int base = S.cur & ~31;
    unsigned m = 0;
    for (int j = 0; j < 32 && base + j < S.n; j++)
        if (S.lanes[base + j].state != DONE)
            m |= 1u << j;
    return m;
}

void sw_emu_fault(const char *file, int line, const char *why)
{
    record_fault(S.cur, "%s (%s:%d)", why, file, line);
    fault_here();
}

void *sw_emu_static_shared(const void *key, size_t bytes, const char *file, int line)
{
    for (int d = 0; d < S.n_decls; d++)
        if (S.decls[d].key == key)
            return S.decls[d].ptr;
    if (S.static_bytes + bytes + S.dynamic_bytes > SHARED_LIMIT) {
        record_fault(S.cur,
                     "shared memory at %s:%d: %zu static bytes with %zu before it and %zu dynamic "
                     "are above the %u bytes a block may have",
                     file, line, bytes, S.static_bytes, S.dynamic_bytes, SHARED_LIMIT);
        fault_here();
    }
    if (S.n_decls == MAX_SHARED_DECLS) {
        record_fault(S.cur, "more than %d __shared__ declarations", MAX_SHARED_DECLS);
        fault_here();
    }
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        record_fault(S.cur, "out of host memory for shared memory");
        fault_here();
    }
    memset(p, 0xff, bytes);
    S.decls[S.n_decls].key = key;
    S.decls[S.n_decls].ptr = p;
    S.n_decls++;
    S.static_bytes += bytes;
    return p;
}

void *sw_emu_dynamic_shared(void)
{
    return S.dynamic;
}
