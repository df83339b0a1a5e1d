/* The products' scratch (matmul_half's narrowed activation, matmul_q8's
 * quantized rows and their scales) when CUDA graphs replay them (issue 37).
 *
 * Eagerly a product takes a pool block per call and frees it at once (stream
 * order makes that safe). A graph cannot: it keeps the pointers it was
 * captured with, and nothing may be allocated inside a capture. So the
 * backend keeps one workspace block, grown only in capture_begin (before the
 * capture starts), which every product uses in stream order while it exists.
 * Each graph captured with it holds a reference: a block outgrown while
 * graphs still replay it stays until the last of them is freed, and the
 * memory goes back to the pool with the last graph (a closed model leaves
 * nothing allocated).
 *
 * Its size is learnt where it is needed: a product inside a capture that the
 * block cannot serve fails with SW_ERR_NOMEM and the size is remembered
 * (ws_wanted, for the backend's life: a number, not memory), and the
 * caller's next capture begins with the block grown to it (backend.h,
 * capture_begin). Chosen over a workspace the caller reserves and passes:
 * the sizes are the backend's own business (the narrowed type, the int8
 * scales' alignment), no op's arguments change, and any capture (the
 * encoder's too) gets the same block without knowing what is inside. */
#include <stdlib.h>

#include "cuda_internal.h"

struct sw_cuda_workspace {
    void *data;
    size_t bytes;
    int refs; /* graphs captured with it */
};

/* The block goes back to the pool; the backend forgets it if it is its
 * current one. Outside a capture only (cuda_free returns the block). */
static void workspace_drop(sw_backend *be, sw_cuda_workspace *ws)
{
    sw_cuda *c = sw_cuda_of(be);
    if (c->ws == ws)
        c->ws = NULL;
    be->free(be, ws->data);
    free(ws);
}

void *sw_cuda_scratch(sw_backend *be, size_t bytes, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (c->ws && c->ws->bytes >= bytes) {
        if (c->capturing)
            c->ws_used = 1;
        return c->ws->data;
    }
    if (c->capturing) {
        if (bytes > c->ws_wanted)
            c->ws_wanted = bytes;
        sw_fail(err, SW_ERR_NOMEM,
                "a product inside a CUDA graph capture needs %zu bytes of scratch and the "
                "backend's workspace holds %zu: the next capture_begin grows it, capture again",
                bytes, c->ws ? c->ws->bytes : (size_t)0);
        return NULL;
    }
    return be->alloc(be, bytes, err);
}

void sw_cuda_scratch_done(sw_backend *be, void *p)
{
    sw_cuda *c = sw_cuda_of(be);
    if (p && !(c->ws && p == c->ws->data))
        be->free(be, p); /* stream order: the next user of the block runs after */
}

sw_status sw_cuda_workspace_grow(sw_backend *be, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (c->ws_wanted == 0 || (c->ws && c->ws->bytes >= c->ws_wanted))
        return SW_OK;
    sw_cuda_workspace *ws = (sw_cuda_workspace *)calloc(1, sizeof *ws);
    if (!ws)
        return sw_fail(err, SW_ERR_NOMEM, "out of host memory for the CUDA workspace");
    ws->data = be->alloc(be, c->ws_wanted, err);
    if (!ws->data) {
        free(ws);
        return err->code;
    }
    ws->bytes = c->ws_wanted;
    sw_cuda_workspace *old = c->ws;
    c->ws = ws;
    if (old && old->refs == 0)
        workspace_drop(be, old); /* else its graphs free it (sw_cuda_workspace_release) */
    return SW_OK;
}

sw_cuda_workspace *sw_cuda_workspace_capture_over(sw_backend *be, int kept)
{
    sw_cuda *c = sw_cuda_of(be);
    sw_cuda_workspace *ws = kept && c->ws_used ? c->ws : NULL;
    c->ws_used = 0;
    if (ws)
        ws->refs++;
    else if (c->ws && c->ws->refs == 0)
        workspace_drop(be, c->ws); /* grown for a capture that did not keep it */
    return ws;
}

void sw_cuda_workspace_release(sw_backend *be, sw_cuda_workspace *ws)
{
    if (ws && --ws->refs == 0)
        workspace_drop(be, ws);
}

void sw_cuda_workspace_destroy(sw_cuda *c)
{
    free(c->ws); /* the device memory goes with the pool */
    c->ws = NULL;
}
