/* Stream capture and graph replay in the emulator (emu_graph.cpp): work
 * queued on a capturing stream is recorded, not run; each cudaGraphLaunch
 * runs it in order with the argument values of capture time while reading
 * device memory as it is at the replay; and what a GPU refuses during a
 * capture (a synchronisation, a pageable host copy, cudaMalloc, a legacy
 * stream copy) is refused with its error and invalidates the capture. */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_internal.h"

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* p[i] = p[i] * scale + *step for every i < *length: a scalar frozen at
 * capture beside two device values read at each replay, the way a captured
 * decoder step reads its current length. */
__global__ void scale_add(float *p, float scale, const float *step, const int *length, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && i < *length)
        p[i] = p[i] * scale + *step;
}

/* one more than before: the kernel a replay advances the length with */
__global__ void bump(int *length)
{
    if (threadIdx.x == 0)
        *length += 1;
}

/* A shuffle whose mask leaves out its caller: a fault at replay. */
__global__ void bad_shuffle(float *p)
{
    p[threadIdx.x] = __shfl_sync(0x1u, p[threadIdx.x], 0);
}

static float *device_floats(const float *host, int n)
{
    float *d = NULL;
    CHECK(cudaMalloc(&d, sizeof(float) * n) == cudaSuccess);
    CHECK(cudaMemcpy(d, host, sizeof(float) * n, cudaMemcpyHostToDevice) == cudaSuccess);
    return d;
}

static void capture_and_replay(cudaStream_t s)
{
    const int n = 8;
    float host[n] = {1, 2, 3, 4, 5, 6, 7, 8}, one = 1.0f;
    float *p = device_floats(host, n), *step = device_floats(&one, 1), *copy = NULL;
    int *length = NULL, three = 3;
    CHECK(cudaMalloc(&copy, sizeof(float) * n) == cudaSuccess);
    CHECK(cudaMalloc(&length, sizeof(int)) == cudaSuccess);
    CHECK(cudaMemcpy(length, &three, sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);

    float scale = 2.0f;
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(cudaStreamIsCapturing(s, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusActive);
    SW_LAUNCH(scale_add, dim3(1), dim3(32), 0, s)(p, scale, step, length, n);
    SW_LAUNCH(bump, dim3(1), dim3(32), 0, s)(length);
    CHECK(cudaMemcpyAsync(copy, p, sizeof(float) * n, cudaMemcpyDeviceToDevice, s) == cudaSuccess);
    CHECK(cudaMemsetAsync(p + n - 1, 0, sizeof(float), s) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    scale = 100.0f; /* a host value changed after capture: the graph keeps 2 */

    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess && graph);
    float now[n];
    CHECK(cudaMemcpy(now, p, sizeof now, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(now[0] == 1 && now[n - 1] == 8); /* recorded, not run */
    CHECK(cudaStreamIsCapturing(s, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusNone);
    CHECK(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess && exec);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess); /* the executable graph outlives it */

    /* First replay: length 3, step 1: the first three become x * 2 + 1. */
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(cudaMemcpy(now, copy, sizeof now, cudaMemcpyDeviceToHost) == cudaSuccess);
    const float first[n] = {3, 5, 7, 4, 5, 6, 7, 8};
    for (int i = 0; i < n; i++)
        CHECK(now[i] == first[i]);
    CHECK(cudaMemcpy(now, p, sizeof now, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(now[n - 1] == 0.0f); /* the memset ran after the copy */

    /* Second replay: the device's length is now 4 (the graph bumped it) and
     * its step is uploaded as 10 between the replays; the scale stays 2. */
    float ten = 10.0f;
    CHECK(cudaMemcpy(step, &ten, sizeof ten, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    CHECK(cudaMemcpy(now, copy, sizeof now, cudaMemcpyDeviceToHost) == cudaSuccess);
    const float second[n] = {16, 20, 24, 18, 5, 6, 7, 0};
    for (int i = 0; i < n; i++)
        CHECK(now[i] == second[i]);
    int len = 0;
    CHECK(cudaMemcpy(&len, length, sizeof len, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(len == 5);

    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaFree(p) == cudaSuccess && cudaFree(step) == cudaSuccess &&
          cudaFree(copy) == cudaSuccess && cudaFree(length) == cudaSuccess);
}

/* cuBLAS on a capturing stream is recorded too: alpha and beta (host
 * pointers) are read at capture, A, B and C at each replay. */
static void cublas_in_a_graph(cudaStream_t s)
{
    const sw_cublas_api *blas = sw_cublas_load(NULL, NULL);
    sw_cublas_handle h = NULL;
    CHECK(blas && blas->create(&h) == 0 && blas->set_stream(h, s) == 0);
    /* column-major 2x2: C = alpha * A * B */
    float a_host[4] = {1, 2, 3, 4}, b_host[4] = {1, 0, 0, 1}, c_host[4];
    float *a = device_floats(a_host, 4), *b = device_floats(b_host, 4);
    float *c = device_floats(b_host, 4), *c32 = device_floats(b_host, 4);
    float alpha = 1.0f, beta = 0.0f;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(blas->sgemm(h, SW_CUBLAS_OP_N, SW_CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta, c,
                      2) == 0);
    void *more = NULL; /* the pool growing inside a global-mode capture */
    CHECK(cudaMalloc(&more, 64) == cudaErrorStreamCaptureUnsupported && !more);
    cudaGraph_t graph = NULL;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated && !graph);
    (void)cudaGetLastError();
    CHECK(cudaMemcpy(c_host, c, sizeof c_host, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(c_host[0] == 1 && c_host[1] == 0); /* the product was recorded, never run */

    /* again, without the refused cudaMalloc */
    alpha = 1.0f;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(blas->sgemm(h, SW_CUBLAS_OP_N, SW_CUBLAS_OP_N, 2, 2, 2, &alpha, a, 2, b, 2, &beta, c,
                      2) == 0);
    CHECK(blas->gemm_ex(h, SW_CUBLAS_OP_N, SW_CUBLAS_OP_N, 2, 2, 2, &alpha, a, 0, 2, b, 0, 2, &beta,
                        c32, 0, 2, 68, -1) == 0);
    alpha = 3.0f;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess && graph);
    cudaGraphExec_t exec = NULL;
    CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0) == cudaSuccess);
    CHECK(cudaMemcpy(c_host, c, sizeof c_host, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(c_host[0] == 1 && c_host[1] == 0); /* nothing ran yet: C is still the identity */
    float b2[4] = {2, 0, 0, 2};
    CHECK(cudaMemcpy(b, b2, sizeof b2, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
    CHECK(cudaMemcpy(c_host, c, sizeof c_host, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int i = 0; i < 4; i++)
        CHECK(c_host[i] == 2 * a_host[i]); /* B as replayed, alpha 1 as captured */
    CHECK(cudaMemcpy(c_host, c32, sizeof c_host, cudaMemcpyDeviceToHost) == cudaSuccess);
    for (int i = 0; i < 4; i++)
        CHECK(c_host[i] == 2 * a_host[i]);
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess && cudaGraphDestroy(graph) == cudaSuccess);
    CHECK(blas->destroy(h) == 0);
    CHECK(cudaFree(a) == cudaSuccess && cudaFree(b) == cudaSuccess && cudaFree(c) == cudaSuccess &&
          cudaFree(c32) == cudaSuccess);
}

/* Each call a GPU refuses during capture: the call's error, then the capture
 * ends invalidated with no graph; nothing recorded before it runs. */
static void refused(cudaStream_t s, int which)
{
    float *d = NULL, host = 5.0f;
    CHECK(cudaMalloc(&d, sizeof(float)) == cudaSuccess);
    CHECK(cudaMemcpy(d, &host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess);
    int len = 1;
    int *length = NULL;
    CHECK(cudaMalloc(&length, sizeof(int)) == cudaSuccess);
    CHECK(cudaMemcpy(length, &len, sizeof len, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    SW_LAUNCH(scale_add, dim3(1), dim3(32), 0, s)(d, 2.0f, d, length, 1); /* 15, if it ran */
    cudaError_t e = cudaSuccess, want = cudaErrorStreamCaptureUnsupported;
    float back = 0;
    void *extra = NULL;
    switch (which) {
    case 0: e = cudaStreamSynchronize(s); break;
    case 1: e = cudaMemcpyAsync(&back, d, sizeof back, cudaMemcpyDeviceToHost, s); break;
    case 2: e = cudaMemcpyAsync(d, &host, sizeof host, cudaMemcpyHostToDevice, s); break;
    case 3:
        e = cudaDeviceSynchronize();
        want = cudaErrorStreamCaptureImplicit;
        break;
    case 4:
        e = cudaMemcpy(&back, d, sizeof back, cudaMemcpyDeviceToHost);
        want = cudaErrorStreamCaptureImplicit;
        break;
    case 5: e = cudaMalloc(&extra, 64); break;
    }
    CHECK(e == want);
    CHECK(cudaGetLastError() == want);
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(s, &status) == cudaSuccess &&
          status == cudaStreamCaptureStatusInvalidated);
    cudaGraph_t graph = (cudaGraph_t)&graph;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated && !graph);
    (void)cudaGetLastError();
    CHECK(cudaMemcpy(&back, d, sizeof back, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(back == 5.0f); /* the captured launch never ran */
    CHECK(cudaFree(d) == cudaSuccess && cudaFree(length) == cudaSuccess);
}

static void misuse(cudaStream_t s)
{
    cudaGraph_t graph = NULL;
    CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorIllegalState);
    CHECK(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal) ==
          cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaErrorIllegalState);
    /* relaxed mode allows cudaMalloc (the pool may grow during a capture) */
    void *d = NULL;
    CHECK(cudaMalloc(&d, 16) == cudaSuccess);
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess && graph);
    CHECK(cudaFree(d) == cudaSuccess);
    cudaGraphExec_t exec = NULL;
    CHECK(cudaGraphInstantiate(&exec, graph) == cudaSuccess);
    CHECK(cudaGraphLaunch(exec, s) == cudaSuccess); /* an empty graph */
    (void)cudaGetLastError();

    /* A kernel that faults inside a replay: the fault is the next error. */
    float *p = NULL;
    CHECK(cudaMalloc(&p, sizeof(float) * 32) == cudaSuccess);
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    SW_LAUNCH(bad_shuffle, dim3(1), dim3(32), 0, s)(p);
    CHECK(cudaGetLastError() == cudaSuccess); /* recorded: nothing ran */
    cudaGraph_t bad = NULL;
    cudaGraphExec_t bad_exec = NULL;
    CHECK(cudaStreamEndCapture(s, &bad) == cudaSuccess);
    CHECK(cudaGraphInstantiate(&bad_exec, bad) == cudaSuccess);
    CHECK(cudaGraphLaunch(bad_exec, s) == cudaSuccess);
    CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
    /* A launch outside CUDA's limits is refused at capture, as at a launch. */
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    SW_LAUNCH(bad_shuffle, dim3(1), dim3(2048), 0, s)(p);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
    cudaGraph_t nothing = NULL;
    CHECK(cudaStreamEndCapture(s, &nothing) == cudaSuccess);
    CHECK(cudaGraphDestroy(nothing) == cudaSuccess);
    CHECK(cudaGraphExecDestroy(bad_exec) == cudaSuccess && cudaGraphDestroy(bad) == cudaSuccess);
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess && cudaGraphDestroy(graph) == cudaSuccess);
    CHECK(cudaFree(p) == cudaSuccess);
}

int main(void)
{
    cudaStream_t s = NULL;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "no stream\n");
        return 1;
    }
    capture_and_replay(s);
    cublas_in_a_graph(s);
    for (int which = 0; which < 6; which++)
        refused(s, which);
    misuse(s);
    CHECK(cudaStreamDestroy(s) == cudaSuccess);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("stream capture and graph replay: all checks passed\n");
    return 0;
}
