/* The CUDA runtime calls of the backend, on the host. Device memory is
 * malloc'd at exactly the size asked (so AddressSanitizer reports a kernel
 * that reads one element past a buffer) and filled with NaN bytes (so a
 * kernel that reads what nobody wrote gives NaN, as uninitialised GPU memory
 * often does not). Streams and events are in program order: a launch has
 * finished when it returns. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <set>
#include <string>

#include "emu_errors.h"
#include "emu_internal.h"
#include "host_memory.h"

namespace
{

pthread_mutex_t memory_lock = PTHREAD_MUTEX_INITIALIZER;
size_t exact_hint; /* see sw_emu_expect_alloc */

struct CUstreamish {
    int magic;
};

/* The emulated GPU's memory is the host's: what this process can have
 * (MemAvailable, or its cgroup's headroom), as the CPU backend reports it. */
sw_host_memory host_memory(void)
{
    sw_host_memory m;
    sw_host_memory_read(NULL, &m);
    if (m.total_bytes == 0)
        m.total_bytes = m.available_bytes = (uint64_t)8 << 30;
    return m;
}

/* SAYWHO_CUDA_EMU_COVERAGE=file: every distinct (kernel, grid, block, shared
 * bytes) of the process is appended to the file at exit, for the report of
 * which kernels and launch configurations the tests ran. */
pthread_mutex_t coverage_lock = PTHREAD_MUTEX_INITIALIZER;
std::set<std::string> *coverage;

void write_coverage(void)
{
    const char *path = getenv("SAYWHO_CUDA_EMU_COVERAGE");
    FILE *f = path && coverage ? fopen(path, "a") : NULL;
    if (!f)
        return;
    for (const std::string &line : *coverage)
        fprintf(f, "%s\n", line.c_str());
    fclose(f);
}

} // namespace

void sw_emu_count_launch(const char *kernel, dim3 grid, dim3 block, size_t shared)
{
    static int enabled = -1;
    if (enabled < 0)
        enabled = getenv("SAYWHO_CUDA_EMU_COVERAGE") != NULL;
    if (!enabled)
        return;
    char line[256];
    snprintf(line, sizeof line, "%s\tgrid %u,%u,%u\tblock %u,%u,%u\tshared %zu", kernel, grid.x,
             grid.y, grid.z, block.x, block.y, block.z, shared);
    pthread_mutex_lock(&coverage_lock);
    if (!coverage) {
        coverage = new std::set<std::string>();
        atexit(write_coverage);
    }
    coverage->insert(line);
    pthread_mutex_unlock(&coverage_lock);
}

/* The backend's pool asks for its size class; the exact size it was given
 * comes first through this hint, so the buffer ends where the tensor does. */
extern "C" __attribute__((visibility("hidden"))) void sw_emu_expect_alloc(size_t bytes)
{
    pthread_mutex_lock(&memory_lock);
    exact_hint = bytes;
    pthread_mutex_unlock(&memory_lock);
}

cudaError_t sw_emu_malloc(void **ptr, size_t bytes)
{
    cudaError_t refused = sw_emu_capture_refuse(NULL, "cudaMalloc");
    if (refused != cudaSuccess) {
        *ptr = NULL;
        return refused;
    }
    pthread_mutex_lock(&memory_lock);
    if (exact_hint && exact_hint <= bytes)
        bytes = exact_hint;
    exact_hint = 0;
    pthread_mutex_unlock(&memory_lock);
    void *p = NULL;
    /* 256 bytes, as cudaMalloc aligns; the size itself is not rounded up. */
    if (posix_memalign(&p, 256, bytes ? bytes : 1) != 0) {
        *ptr = NULL;
        sw_emu_set_error(cudaErrorMemoryAllocation, "out of memory (%zu bytes)", bytes);
        return cudaErrorMemoryAllocation;
    }
    memset(p, 0xff, bytes);
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    cudaError_t refused = sw_emu_capture_refuse(NULL, "cudaFree"); /* it synchronises */
    if (refused != cudaSuccess)
        return refused;
    free(ptr);
    return cudaSuccess;
}

/* Pinned host memory (the backend's upload staging): plain host memory here,
 * where every copy happens when it is queued. */
cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
    *ptr = malloc(bytes ? bytes : 1);
    if (!*ptr) {
        sw_emu_set_error(cudaErrorMemoryAllocation, "out of host memory for pinned memory");
        return cudaErrorMemoryAllocation;
    }
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *ptr)
{
    free(ptr);
    return cudaSuccess;
}

/* SAYWHO_CUDA_EMU_COPY_LOG=file: each copy between host and device appends
 * "H2D <bytes> <hash>" or "D2H <bytes> <hash>" to the file as it happens
 * (hash: FNV-1a 64 of the bytes, in hex), so a test can mark its stages in the
 * same file, count what each moved, and tell an upload that depends only on
 * shapes (an index table: the same bytes whatever the input) from one that
 * carries data (tests/test_device_copies.py). Read at every copy: a test
 * turns it on after the library is loaded. */
static void log_copy(const void *src, size_t bytes, cudaMemcpyKind kind)
{
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost)
        return;
    const char *path = getenv("SAYWHO_CUDA_EMU_COPY_LOG");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    uint64_t h = 14695981039346656037ull;
    const unsigned char *p = (const unsigned char *)src;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    fprintf(f, "%s %zu %016llx\n", kind == cudaMemcpyHostToDevice ? "H2D" : "D2H", bytes,
            (unsigned long long)h);
    fclose(f);
}

static void copy_now(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    log_copy(src, bytes, kind);
    if (bytes)
        memmove(dst, src, bytes);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    cudaError_t refused = sw_emu_capture_refuse(NULL, "cudaMemcpy"); /* the legacy stream */
    if (refused != cudaSuccess)
        return refused;
    copy_now(dst, src, bytes, kind);
    return cudaSuccess;
}

/* Captured, a copy between device buffers is recorded; one with host memory
 * is refused: all host memory here is pageable (no cudaHostAlloc), and a GPU
 * cannot capture a pageable copy. */
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    if (sw_emu_capturing(stream)) {
        if (kind != cudaMemcpyDeviceToDevice)
            return sw_emu_capture_refuse(stream, "cudaMemcpyAsync to or from pageable host "
                                                 "memory");
        sw_emu_record(stream, [=]() { copy_now(dst, src, bytes, kind); });
        return cudaSuccess;
    }
    copy_now(dst, src, bytes, kind);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    cudaError_t refused = sw_emu_capture_refuse(NULL, "cudaMemset"); /* the legacy stream */
    if (refused != cudaSuccess)
        return refused;
    memset(dst, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream)
{
    if (sw_emu_capturing(stream)) {
        sw_emu_record(stream, [=]() { memset(dst, value, bytes); });
        return cudaSuccess;
    }
    memset(dst, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device != 0) {
        sw_emu_set_error(cudaErrorInvalidDevice, "the emulator has one device, 0");
        return cudaErrorInvalidDevice;
    }
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}

/* A T4's limits (sm_75): the oldest GPU saywho supports, with the least
 * shared memory and registers per block, so a launch that fits here fits
 * every supported GPU. Two multiprocessors keep grid-stride loops short. */
#define EMU_SMS 2

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (device != 0)
        return cudaErrorInvalidDevice;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 48 << 10; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = EMU_SMS; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 7; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 5; break;
    default: return cudaErrorInvalidValue;
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (device != 0)
        return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "saywho CUDA emulator (CPU, sm_75 limits)");
    prop->totalGlobalMem = (size_t)host_memory().total_bytes;
    prop->sharedMemPerBlock = 48 << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->major = 7;
    prop->minor = 5;
    prop->multiProcessorCount = EMU_SMS;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    sw_host_memory m = host_memory();
    *total_bytes = (size_t)m.total_bytes;
    *free_bytes = (size_t)m.available_bytes;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return sw_emu_capture_refuse(NULL, "cudaDeviceSynchronize");
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags)
{
    (void)flags;
    CUstreamish *s = (CUstreamish *)malloc(sizeof *s);
    if (!s)
        return cudaErrorMemoryAllocation;
    s->magic = 0x5717ea;
    *stream = (cudaStream_t)(void *)s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (sw_emu_capturing(stream))
        return sw_emu_capture_refuse(stream, "cudaStreamDestroy");
    free((void *)stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (sw_emu_capturing(stream))
        return sw_emu_capture_refuse(stream, "cudaStreamSynchronize");
    return cudaSuccess;
}

struct CUevent_st {
    struct timespec at;
};

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags)
{
    (void)flags;
    *event = (cudaEvent_t)calloc(1, sizeof(CUevent_st));
    return *event ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    clock_gettime(CLOCK_MONOTONIC, &event->at);
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    (void)event;
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float)((end->at.tv_sec - start->at.tv_sec) * 1e3 +
                  (end->at.tv_nsec - start->at.tv_nsec) / 1e6);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    free(event);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags)
{
    (void)stream;
    (void)event;
    (void)flags;
    return cudaSuccess;
}
