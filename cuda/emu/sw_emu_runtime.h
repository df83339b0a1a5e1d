/* The CUDA runtime API calls the backend makes, served on the host by
 * emu_runtime.cpp. Error numbers are the runtime's own. */
#ifndef SW_EMU_RUNTIME_H
#define SW_EMU_RUNTIME_H

#include <stddef.h>

#include "sw_emu_grid.h" /* SW_EMU_API, cudaStream_t */

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorStubLibrary = 34,
    cudaErrorInsufficientDriver = 35,
    cudaErrorDevicesUnavailable = 46,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorLaunchFailure = 719,
    cudaErrorSystemDriverMismatch = 803,
    cudaErrorCompatNotSupportedOnDevice = 804,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorStreamCaptureInvalidated = 901,
    cudaErrorStreamCaptureImplicit = 906
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76
} cudaDeviceAttr;

#define cudaStreamDefault      0x0u
#define cudaStreamNonBlocking  0x1u
#define cudaEventDefault       0x0u
#define cudaEventDisableTiming 0x2u

struct CUevent_st;
typedef struct CUevent_st *cudaEvent_t;

typedef struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major;
    int minor;
    int multiProcessorCount;
} cudaDeviceProp;

SW_EMU_API cudaError_t cudaGetDeviceCount(int *count);
SW_EMU_API cudaError_t cudaSetDevice(int device);
SW_EMU_API cudaError_t cudaGetDevice(int *device);
SW_EMU_API cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
SW_EMU_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
SW_EMU_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
SW_EMU_API cudaError_t cudaDriverGetVersion(int *version);
SW_EMU_API cudaError_t cudaRuntimeGetVersion(int *version);
SW_EMU_API cudaError_t cudaDeviceSynchronize(void);

SW_EMU_API cudaError_t sw_emu_malloc(void **ptr, size_t bytes);
template <typename T> static inline cudaError_t cudaMalloc(T **ptr, size_t bytes)
{
    return sw_emu_malloc((void **)ptr, bytes);
}
SW_EMU_API cudaError_t cudaFree(void *ptr);
SW_EMU_API cudaError_t cudaMallocHost(void **ptr, size_t bytes);
SW_EMU_API cudaError_t cudaFreeHost(void *ptr);
SW_EMU_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
SW_EMU_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                       cudaMemcpyKind kind, cudaStream_t stream);
SW_EMU_API cudaError_t cudaMemset(void *dst, int value, size_t bytes);
SW_EMU_API cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream);

SW_EMU_API cudaError_t cudaStreamCreate(cudaStream_t *stream);
SW_EMU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
SW_EMU_API cudaError_t cudaStreamDestroy(cudaStream_t stream);
SW_EMU_API cudaError_t cudaStreamSynchronize(cudaStream_t stream);
SW_EMU_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
SW_EMU_API cudaError_t cudaEventCreate(cudaEvent_t *event);
SW_EMU_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
SW_EMU_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
SW_EMU_API cudaError_t cudaEventSynchronize(cudaEvent_t event);
SW_EMU_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
SW_EMU_API cudaError_t cudaEventDestroy(cudaEvent_t event);

/* ---- stream capture and graphs (emu_graph.cpp) ---- */
typedef enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;

typedef enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1,
    cudaStreamCaptureStatusInvalidated = 2
} cudaStreamCaptureStatus;

struct CUgraph_st;
typedef struct CUgraph_st *cudaGraph_t;
struct CUgraphExec_st;
typedef struct CUgraphExec_st *cudaGraphExec_t;

SW_EMU_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
SW_EMU_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph);
SW_EMU_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status);
SW_EMU_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                     unsigned long long flags);
/* CUDA 12's signature (CUDA 11's took an error node and a log buffer). */
static inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                               unsigned long long flags = 0)
{
    return cudaGraphInstantiateWithFlags(exec, graph, flags);
}
SW_EMU_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
SW_EMU_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
SW_EMU_API cudaError_t cudaGraphDestroy(cudaGraph_t graph);

SW_EMU_API cudaError_t cudaGetLastError(void);
SW_EMU_API cudaError_t cudaPeekAtLastError(void);
/* For a fault inside a kernel this is the emulator's account of it (which
 * kernel, block, thread and why), not only the runtime's generic sentence. */
SW_EMU_API const char *cudaGetErrorString(cudaError_t e);
SW_EMU_API const char *cudaGetErrorName(cudaError_t e);

#endif
