/* The CUDA dialect of the backend (the .cu files in cuda/), compiled as C++ for the CPU.
 *
 * This header stands in for nvcc and the CUDA runtime when the backend's
 * sources are built as libsaywho_cuda_emu.so (SW_CUDA_EMULATION): kernels
 * become plain functions, each block's threads become fibers on one OS thread
 * (emu_sched.cpp), and __syncthreads, warp shuffles and votes are the points
 * where the scheduler switches between them, so a missing barrier or a wrong
 * shuffle mask changes the result or stops the launch, as on a GPU. Device
 * memory is host memory of exactly the size asked (AddressSanitizer sees
 * every overflow), filled with NaN; cuBLAS is served by OpenBLAS with
 * cuBLAS's argument checks (emu_cublas.cpp).
 *
 * Only what the backend uses is here; a kernel that needs more fails to
 * compile in the emulated build, which CI builds on every change. The grid's
 * types and the scheduler's entry points are sw_emu_grid.h's. */
#ifndef SW_EMU_H
#define SW_EMU_H

#ifndef __cplusplus
#error "sw_emu.h is C++: compile the .cu files with -x c++"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <utility>

#include "sw_emu_grid.h"

/* ---- qualifiers nvcc knows and a host compiler does not ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__    __attribute__((noinline))
#define __restrict__ __restrict
/* Register limits have no meaning here (see docs/cuda_emulator.md). */
#define __launch_bounds__(...)

static const int warpSize = 32;

/* ---- barriers, shuffles and votes: sw_emu_grid.h's scheduling points ---- */
#define __syncthreads() sw_emu_syncthreads(__FILE__, __LINE__)
#define __syncwarp(...) sw_emu_syncwarp_(__FILE__, __LINE__, ##__VA_ARGS__)
static inline void sw_emu_syncwarp_(const char *file, int line, unsigned mask = 0xffffffffu)
{
    (void)sw_emu_warp_exchange(mask, 0, "__syncwarp", file, line);
}

/* ---- warp shuffles and votes ---- */
template <typename T> static inline uint64_t sw_emu_bits(T v)
{
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof v);
    return u;
}

template <typename T> static inline T sw_emu_from_bits(uint64_t u)
{
    T v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* src < 0: the lane keeps its own value (outside its width segment). */
template <typename T>
static inline T sw_emu_shfl(unsigned mask, T v, int src, const char *what, const char *file,
                            int line)
{
    const uint64_t *all = sw_emu_warp_exchange(mask, sw_emu_bits(v), what, file, line);
    if (src < 0)
        return v;
    if (!(mask >> src & 1u))
        sw_emu_fault(file, line, "a shuffle reads a lane outside its mask");
    return sw_emu_from_bits<T>(all[src]);
}

#define SW_EMU_SEG(width) ((int)sw_emu_lane() & ~((width)-1))
#define __shfl_sync(mask, v, src, ...)                                                             \
    sw_emu_shfl_idx_(mask, v, src, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_xor_sync(mask, v, lm, ...)                                                          \
    sw_emu_shfl_xor_(mask, v, lm, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_up_sync(mask, v, d, ...)                                                            \
    sw_emu_shfl_up_(mask, v, d, __FILE__, __LINE__, ##__VA_ARGS__)
#define __shfl_down_sync(mask, v, d, ...)                                                          \
    sw_emu_shfl_down_(mask, v, d, __FILE__, __LINE__, ##__VA_ARGS__)

template <typename T>
static inline T sw_emu_shfl_idx_(unsigned mask, T v, int src, const char *f, int l, int width = 32)
{
    return sw_emu_shfl(mask, v, SW_EMU_SEG(width) + (src & (width - 1)), "__shfl_sync", f, l);
}

template <typename T>
static inline T sw_emu_shfl_xor_(unsigned mask, T v, int lm, const char *f, int l, int width = 32)
{
    int lane = (int)sw_emu_lane(), src = lane ^ lm;
    int seg = lane & ~(width - 1);
    return sw_emu_shfl(mask, v, src >= seg && src < seg + width ? src : -1, "__shfl_xor_sync", f,
                       l);
}

template <typename T>
static inline T sw_emu_shfl_up_(unsigned mask, T v, unsigned d, const char *f, int l,
                                int width = 32)
{
    int lane = (int)sw_emu_lane(), src = lane - (int)d;
    return sw_emu_shfl(mask, v, src >= (lane & ~(width - 1)) ? src : -1, "__shfl_up_sync", f, l);
}

template <typename T>
static inline T sw_emu_shfl_down_(unsigned mask, T v, unsigned d, const char *f, int l,
                                  int width = 32)
{
    int lane = (int)sw_emu_lane(), src = lane + (int)d;
    return sw_emu_shfl(mask, v, src < (lane & ~(width - 1)) + width ? src : -1, "__shfl_down_sync",
                       f, l);
}

static inline unsigned sw_emu_ballot_(unsigned mask, int pred, const char *what, const char *f,
                                      int l)
{
    const uint64_t *all = sw_emu_warp_exchange(mask, pred != 0, what, f, l);
    unsigned bits = 0;
    for (int i = 0; i < 32; i++)
        if ((mask >> i & 1u) && all[i])
            bits |= 1u << i;
    return bits;
}

#define __ballot_sync(mask, pred) sw_emu_ballot_(mask, pred, "__ballot_sync", __FILE__, __LINE__)
#define __any_sync(mask, pred)    (sw_emu_ballot_(mask, pred, "__any_sync", __FILE__, __LINE__) != 0)
#define __all_sync(mask, pred)                                                                     \
    (sw_emu_ballot_(mask, pred, "__all_sync", __FILE__, __LINE__) == (unsigned)(mask))
/* Lanes of the warp that have not exited: a GPU's answer also depends on
 * divergence, which the emulator does not model. */
#define __activemask() sw_emu_active_lanes()

/* ---- shared memory ----
 * Each block gets its own exact-size, NaN-filled buffers, freed when the block
 * ends, so a read before any write gives NaN and an overflow is an ASan
 * report. Kernels declare them through SW_SHARED / SW_DYNAMIC_SHARED
 * (cuda_internal.h), which are __shared__ arrays in the real build. */
#define SW_EMU_SHARED(type, name, count)                                                           \
    static const char name##_sw_emu_key = 0;                                                       \
    type *const name = (type *)sw_emu_static_shared(&name##_sw_emu_key, sizeof(type) * (count),    \
                                                    __FILE__, __LINE__)
#define SW_EMU_DYNAMIC_SHARED(type, name) type *const name = (type *)sw_emu_dynamic_shared()

/* ---- atomics: threads are fibers on one OS thread, so a read-modify-write
 * that never yields is atomic ---- */
template <typename T> static inline T atomicAdd(T *p, T v)
{
    T old = *p;
    *p = old + v;
    return old;
}
template <typename T> static inline T atomicSub(T *p, T v)
{
    T old = *p;
    *p = old - v;
    return old;
}
template <typename T> static inline T atomicMax(T *p, T v)
{
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
template <typename T> static inline T atomicMin(T *p, T v)
{
    T old = *p;
    *p = old < v ? old : v;
    return old;
}
template <typename T> static inline T atomicExch(T *p, T v)
{
    T old = *p;
    *p = v;
    return old;
}
template <typename T> static inline T atomicCAS(T *p, T cmp, T v)
{
    T old = *p;
    if (old == cmp)
        *p = v;
    return old;
}
template <typename T> static inline T atomicOr(T *p, T v)
{
    T old = *p;
    *p = old | v;
    return old;
}
template <typename T> static inline T atomicAnd(T *p, T v)
{
    T old = *p;
    *p = old & v;
    return old;
}
static inline void __threadfence(void)
{
}
static inline void __threadfence_block(void)
{
}

/* ---- integer and float intrinsics ---- */
/* Sum of the four signed byte products of a and b, plus c. */
static inline int __dp4a(int a, int b, int c)
{
    for (int i = 0; i < 4; i++)
        c += (int)(int8_t)(a >> (8 * i)) * (int)(int8_t)(b >> (8 * i));
    return c;
}
static inline unsigned __dp4a(unsigned a, unsigned b, unsigned c)
{
    for (int i = 0; i < 4; i++)
        c += (a >> (8 * i) & 0xffu) * (b >> (8 * i) & 0xffu);
    return c;
}
static inline int __popc(unsigned x)
{
    return __builtin_popcount(x);
}
static inline int __clz(int x)
{
    return x ? __builtin_clz((unsigned)x) : 32;
}
static inline int __ffs(int x)
{
    return __builtin_ffs(x);
}
/* Rounded operations that nvcc never fuses into an FMA; the emulated build
 * fuses nothing (-ffp-contract=off), so they are the plain operators here. */
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline double __dmul_rn(double a, double b)
{
    return a * b;
}
static inline double __dadd_rn(double a, double b)
{
    return a + b;
}
static inline float __fmaf_rn(float a, float b, float c)
{
    return fmaf(a, b, c);
}
template <typename T> static inline T __ldg(const T *p)
{
    return *p;
}

/* ---- launches: the kernel and its arguments, as one body for sw_emu_launch_grid ---- */
template <typename... P> struct sw_emu_launch {
    const char *name;
    void (*kernel)(P...);
    dim3 grid, block;
    size_t shared;
    cudaStream_t stream;

    template <typename... A> void operator()(A &&...args) const
    {
        static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong arguments");
        /* Converted once to the parameter types, then copied into each
         * thread's call, as a GPU gives each thread its own parameters. */
        struct Call {
            void (*kernel)(P...);
            std::tuple<P...> params;
            static void run(void *self)
            {
                Call *c = (Call *)self;
                std::apply(c->kernel, c->params);
            }
            /* a captured launch keeps its own copy: the values at capture */
            static void *copy(const void *self)
            {
                return new Call(*(const Call *)self);
            }
            static void discard(void *self)
            {
                delete (Call *)self;
            }
        } call{kernel, std::tuple<P...>(std::forward<A>(args)...)};
        sw_emu_launch_grid(name, grid, block, shared, stream, &Call::run, &call, &Call::copy,
                           &Call::discard);
    }
};

template <typename... P>
static inline sw_emu_launch<P...> sw_emu_launcher(const char *name, void (*kernel)(P...), dim3 grid,
                                                  dim3 block, size_t shared, cudaStream_t stream)
{
    return sw_emu_launch<P...>{name, kernel, grid, block, shared, stream};
}

#include "sw_emu_runtime.h"
#include "sw_emu_half.h"

#endif
