/* Stream capture and graph replay on the host. While a stream captures, what
 * is queued on it (a kernel with a copy of its arguments and its launch
 * shape, a device-to-device copy, a memset, a cuBLAS call) is recorded, not
 * run; cudaGraphLaunch runs the recorded work in order. Argument values are
 * those of capture time, as in a CUDA graph: what changes between replays is
 * what the device memory behind the pointers holds. Calls a GPU refuses
 * during capture (a synchronisation, a pageable host copy, cudaMalloc in
 * global mode) are refused here with the same errors, and the capture is
 * invalidated, so the emulator catches what a real GPU would. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <map>
#include <memory>
#include <vector>

#include "emu_errors.h"
#include "emu_internal.h"

typedef std::vector<std::function<void()>> Work;

struct CUgraph_st {
    std::shared_ptr<const Work> work;
};

struct CUgraphExec_st {
    std::shared_ptr<const Work> work;
};

namespace
{

struct Capture {
    cudaStreamCaptureMode mode;
    bool invalidated;
    std::shared_ptr<Work> work;
};

pthread_mutex_t capture_lock = PTHREAD_MUTEX_INITIALIZER;
std::map<cudaStream_t, Capture> *captures; /* the streams capturing now */

Capture *capture_of(cudaStream_t stream)
{
    if (!captures)
        return NULL;
    auto it = captures->find(stream);
    return it == captures->end() ? NULL : &it->second;
}

} // namespace

int sw_emu_capturing(cudaStream_t stream)
{
    pthread_mutex_lock(&capture_lock);
    int on = capture_of(stream) != NULL;
    pthread_mutex_unlock(&capture_lock);
    return on;
}

void sw_emu_record(cudaStream_t stream, std::function<void()> work)
{
    pthread_mutex_lock(&capture_lock);
    Capture *c = capture_of(stream);
    if (c && !c->invalidated)
        c->work->push_back(std::move(work));
    pthread_mutex_unlock(&capture_lock);
}

cudaError_t sw_emu_capture_refuse(cudaStream_t stream, const char *call)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&capture_lock);
    if (stream) {
        Capture *c = capture_of(stream);
        if (c) {
            c->invalidated = true;
            e = cudaErrorStreamCaptureUnsupported;
        }
    } else if (captures) {
        for (auto &it : *captures)
            if (it.second.mode != cudaStreamCaptureModeRelaxed) {
                it.second.invalidated = true;
                e = cudaErrorStreamCaptureImplicit;
            }
        if (e != cudaSuccess && strcmp(call, "cudaMalloc") == 0)
            e = cudaErrorStreamCaptureUnsupported;
    }
    pthread_mutex_unlock(&capture_lock);
    if (e != cudaSuccess)
        sw_emu_set_error(e,
                         "%s during a stream capture: a GPU refuses it and invalidates the "
                         "capture (%s)",
                         call,
                         stream ? "the stream is capturing" : "a global-mode capture is open");
    return e;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    cudaError_t e = cudaSuccess;
    pthread_mutex_lock(&capture_lock);
    if (!stream)
        e = cudaErrorStreamCaptureUnsupported; /* the legacy stream cannot capture */
    else if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed)
        e = cudaErrorInvalidValue;
    else if (capture_of(stream))
        e = cudaErrorIllegalState;
    else {
        if (!captures)
            captures = new std::map<cudaStream_t, Capture>();
        (*captures)[stream] = Capture{mode, false, std::make_shared<Work>()};
    }
    pthread_mutex_unlock(&capture_lock);
    if (e != cudaSuccess)
        sw_emu_set_error(e, "cudaStreamBeginCapture: %s",
                         !stream                      ? "the legacy default stream cannot capture"
                         : e == cudaErrorIllegalState ? "the stream is already capturing"
                                                      : "unknown capture mode");
    return e;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!graph)
        return cudaErrorInvalidValue;
    *graph = NULL;
    pthread_mutex_lock(&capture_lock);
    Capture *c = capture_of(stream);
    if (!c) {
        pthread_mutex_unlock(&capture_lock);
        sw_emu_set_error(cudaErrorIllegalState,
                         "cudaStreamEndCapture: the stream is not capturing");
        return cudaErrorIllegalState;
    }
    Capture done = *c;
    captures->erase(stream);
    pthread_mutex_unlock(&capture_lock);
    if (done.invalidated) {
        sw_emu_set_error(cudaErrorStreamCaptureInvalidated,
                         "cudaStreamEndCapture: the capture was invalidated by a call a GPU "
                         "refuses during capture; no graph");
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = new CUgraph_st{done.work};
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    if (!status)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&capture_lock);
    Capture *c = capture_of(stream);
    *status = !c               ? cudaStreamCaptureStatusNone
              : c->invalidated ? cudaStreamCaptureStatusInvalidated
                               : cudaStreamCaptureStatusActive;
    pthread_mutex_unlock(&capture_lock);
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                          unsigned long long flags)
{
    (void)flags;
    if (!exec || !graph)
        return cudaErrorInvalidValue;
    /* The recorded work is immutable, so the executable graph shares it: it
     * outlives cudaGraphDestroy of its graph, as on a GPU. */
    *exec = new CUgraphExec_st{graph->work};
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (!exec)
        return cudaErrorInvalidResourceHandle;
    std::shared_ptr<const Work> work = exec->work;
    if (sw_emu_capturing(stream)) { /* a graph inside a capture: one more node */
        sw_emu_record(stream, [work]() {
            for (const auto &w : *work)
                w();
        });
        return cudaSuccess;
    }
    /* A kernel that faults stops the replay; its account is what the next
     * cudaGetLastError returns, as an asynchronous fault on a GPU. */
    bool clean = cudaPeekAtLastError() == cudaSuccess;
    for (const auto &w : *work) {
        w();
        if (clean && cudaPeekAtLastError() != cudaSuccess)
            break;
    }
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}
