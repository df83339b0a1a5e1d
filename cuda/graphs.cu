/* CUDA graphs behind the backend table (backend.h, ABI 8): the ops called
 * between capture_begin and capture_end are recorded on the backend's stream
 * and replayed by one cudaGraphLaunch. Global capture mode: a cudaMalloc,
 * cudaFree, synchronous copy or wait anywhere in the process during the
 * capture is refused by the driver and fails the capture, so a step that
 * would allocate or download inside its graph is caught (on the emulator as
 * on a GPU) instead of replaying stale pointers. The products' scratch comes
 * from the backend's workspace, which each graph holds (workspace.cu). */
#include <stdlib.h>

#include "cuda_internal.h"

struct sw_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    sw_cuda_workspace *ws; /* the products' scratch it replays, or NULL */
};

sw_status sw_cuda_capture_begin(sw_backend *be, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    if (c->capturing)
        return sw_fail(err, SW_ERR_ARG, "capture_begin: a capture is already open");
    /* now, while allocating is allowed: what earlier captures asked */
    st = sw_cuda_workspace_grow(be, err);
    if (st != SW_OK)
        return st;
    c->ws_used = 0;
    cudaError_t e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeGlobal);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return sw_cuda_fail(err, e, "starting a CUDA graph capture");
    }
    c->capturing = 1;
    return SW_OK;
}

sw_status sw_cuda_capture_end(sw_backend *be, sw_graph **out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    *out = NULL;
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    if (!c->capturing)
        return sw_fail(err, SW_ERR_ARG, "capture_end: no capture is open");
    c->capturing = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    /* An invalidated capture's first refused call was reported to the op
     * that made it; what ends here is the capture itself. */
    (void)cudaGetLastError();
    if (e != cudaSuccess) {
        (void)sw_cuda_workspace_capture_over(be, 0);
        return sw_cuda_fail(err, e,
                            "ending a CUDA graph capture (an op inside it allocated, freed, "
                            "copied to or from the host or waited for the GPU)");
    }
    sw_graph *g = (sw_graph *)calloc(1, sizeof *g);
    if (!g) {
        (void)sw_cuda_workspace_capture_over(be, 0);
        (void)cudaGraphDestroy(graph);
        return sw_fail(err, SW_ERR_NOMEM, "out of host memory for a CUDA graph");
    }
    g->graph = graph;
    e = cudaGraphInstantiateWithFlags(&g->exec, graph, 0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        (void)sw_cuda_workspace_capture_over(be, 0);
        (void)cudaGraphDestroy(graph);
        free(g);
        return sw_cuda_fail(err, e, "instantiating a CUDA graph");
    }
    g->ws = sw_cuda_workspace_capture_over(be, 1);
    *out = g;
    return SW_OK;
}

sw_status sw_cuda_graph_launch(sw_backend *be, sw_graph *g, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (!g)
        return sw_fail(err, SW_ERR_ARG, "graph_launch: the graph is NULL");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    cudaError_t e = cudaGraphLaunch(g->exec, c->stream);
    c->counted.graph_launches++;
    if (e == cudaSuccess)
        e = cudaGetLastError();
    /* as sw_cuda_check_launch: with SAYWHO_CUDA_SYNC a fault inside the graph
     * is reported here, not at the next copy (the wait is not counted) */
    if (e == cudaSuccess && c->sync_launches && !c->capturing)
        e = cudaStreamSynchronize(c->stream);
    return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "replaying a CUDA graph");
}

void sw_cuda_graph_free(sw_backend *be, sw_graph *g)
{
    if (!g)
        return;
    sw_cuda *c = sw_cuda_of(be);
    sw_error ignored = {SW_OK, {0}};
    if (sw_cuda_enter(c, &ignored) == SW_OK) {
        (void)cudaGraphExecDestroy(g->exec);
        (void)cudaGraphDestroy(g->graph);
        (void)cudaGetLastError();
        /* after the graph: a replay still queued used the block, and stream
         * order puts its next user after it */
        sw_cuda_workspace_release(be, g->ws);
    }
    free(g);
}
