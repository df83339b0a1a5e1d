/* Capture with retries (graph_capture.h). */
#include "graph_capture.h"

/* Each refused capture leaves a larger size for the workspace (the largest
 * scratch asked, cuda/workspace.cu), so the tries are bounded by the number
 * of distinct scratch sizes one capture's products ask: two for Whisper's
 * decoder step and encoder window (rows x d and the MLP's rows x 4d), so
 * the third try at most captures them; one spare. */
#define CAPTURE_TRIES 4

sw_status sw_capture_graph(sw_backend *be, sw_capture_ops ops, void *ctx, sw_graph **out,
                           sw_error *err)
{
    *out = NULL;
    for (int tries = 1;; tries++) {
        if (be->capture_begin(be, err))
            return err->code;
        sw_status op = ops(ctx, err);
        /* the capture ends either way; an op's refusal is the error to tell */
        sw_error end_err = {SW_OK, {0}};
        sw_graph *g = NULL;
        be->capture_end(be, &g, op == SW_OK ? err : &end_err);
        if (op == SW_OK && g) {
            *out = g;
            return SW_OK;
        }
        be->graph_free(be, g);
        if (op != SW_ERR_NOMEM || tries == CAPTURE_TRIES)
            return err->code;
        sw_error_clear(err);
    }
}
