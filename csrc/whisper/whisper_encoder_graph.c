/* The encoder's window as one graph (issue 37). On a backend with graphs
 * the window's ops (the mel's transpose, the convolutions, every block,
 * ln_post and each decoder layer's cross-attention keys and values) are
 * captured at the first window of a batch size and replayed for the later
 * ones: a window is then the mel's staged copy up and one graph launch, and
 * the host does not wait for it (the decoder's ops queue behind it).
 *
 * A graph keeps the pointers it was captured with, so its activations and
 * its outputs live in a rig the model holds, and an audio borrows its rig's
 * outputs until it is freed. Two rigs, because the seek loop encodes the
 * next window while the last one's output is still alive; an encode that
 * finds both lent out runs its ops at once (whisper_encode.c), as does
 * every encode with SAYWHO_CUDA_GRAPHS=0. */
#include <stdlib.h>
#include <string.h>

#include "graph_capture.h"
#include "whisper_internal.h"

struct sw_wh_enc_rig {
    int batch;
    int lent; /* an audio reads its outputs */
    sw_wh_enc_buffers buffers;
    sw_whisper_audio *out; /* the outputs the graph writes: owned here */
    sw_graph *graph;
};

/* Read at each encode, so a process can compare both paths (the tests do).
 * Every compute type: the half and int8 products take their scratch from
 * the CUDA backend's workspace inside a capture (cuda/workspace.cu). The
 * CPU's head-major keys (an index uploaded per window) never meet a graph. */
static int graphs_wanted(const sw_whisper *m)
{
    sw_backend *be = m->obj.be;
    const char *env = getenv("SAYWHO_CUDA_GRAPHS");
    return be->capture_begin && be->conv1d_work && !sw_supports(be, SW_CAP_HEAD_MAJOR_KV, 0, 0) &&
           !(env && strcmp(env, "0") == 0);
}

static void rig_free(sw_whisper *m, sw_wh_enc_rig *r)
{
    if (!r)
        return;
    /* a lost backend took its graphs' memory with it */
    if (r->graph && !m->obj.backend_lost)
        m->obj.be->graph_free(m->obj.be, r->graph);
    sw_wh_enc_buffers_free(m, &r->buffers);
    sw_whisper_audio_free(r->out); /* its own tensors: neither a view nor lent */
    free(r);
}

typedef struct {
    sw_whisper *m;
    sw_wh_enc_rig *r;
} window_ops;

static sw_status record_window(void *ctx, sw_error *err)
{
    const window_ops *o = ctx;
    return sw_wh_enc_run(o->m, &o->r->buffers, o->r->out, err);
}

/* A rig for `batch`: its buffers and outputs, then its ops captured (not
 * run: the first replay runs them). A half or int8 model's first capture
 * is taken again while the workspace grows to its products' scratch
 * (runtime/graph_capture.c): three captures at most, host work only. */
static sw_wh_enc_rig *rig_new(sw_whisper *m, int batch, sw_error *err)
{
    sw_wh_enc_rig *r = calloc(1, sizeof *r);
    if (r)
        r->out = sw_wh_audio_alloc(m, batch);
    if (!r || !r->out) {
        free(r);
        sw_fail(err, SW_ERR_NOMEM, "whisper encode: out of host memory");
        return NULL;
    }
    r->batch = batch;
    window_ops o = {m, r};
    if (sw_wh_enc_buffers_new(m, batch, 1, &r->buffers, err) ||
        sw_wh_enc_outputs_new(r->out, err) ||
        sw_capture_graph(m->obj.be, record_window, &o, &r->graph, err)) {
        rig_free(m, r);
        return NULL;
    }
    return r;
}

/* A rig of this batch not lent out; else a new one in a free place or in
 * the place of one made for another batch size (not lent out); else NULL
 * with err untouched: the caller runs the ops at once. */
static sw_wh_enc_rig *rig_for(sw_whisper *m, int batch, sw_error *err)
{
    int slot = -1;
    for (int i = 0; i < SW_WH_ENC_RIGS; i++) {
        sw_wh_enc_rig *r = m->enc_rig[i];
        if (r && !r->lent && r->batch == batch)
            return r;
        if (!r && slot < 0)
            slot = i;
    }
    for (int i = 0; i < SW_WH_ENC_RIGS && slot < 0; i++)
        if (!m->enc_rig[i]->lent) {
            rig_free(m, m->enc_rig[i]);
            m->enc_rig[i] = NULL;
            slot = i;
        }
    if (slot < 0)
        return NULL;
    m->enc_rig[slot] = rig_new(m, batch, err);
    return m->enc_rig[slot];
}

sw_status sw_wh_enc_graph_encode(sw_whisper *m, const float *mel, int batch, sw_whisper_audio *au,
                                 int *done, sw_error *err)
{
    *done = 0;
    if (!graphs_wanted(m))
        return SW_OK;
    sw_wh_enc_rig *r = rig_for(m, batch, err);
    if (!r)
        return err->code;
    sw_backend *be = m->obj.be;
    const sw_tensor *in = r->buffers.mel;
    if (be->upload(be, in->data, mel, sw_tensor_nbytes(in), err) ||
        be->graph_launch(be, r->graph, err))
        return err->code;
    au->features = r->out->features;
    for (int i = 0; i < m->dims.n_text_layer; i++) {
        au->cross_k[i] = r->out->cross_k[i];
        au->cross_v[i] = r->out->cross_v[i];
    }
    au->lent = &r->lent;
    r->lent = 1;
    *done = 1;
    return SW_OK;
}

void sw_wh_enc_rigs_free(sw_whisper *m)
{
    for (int i = 0; i < SW_WH_ENC_RIGS; i++) {
        rig_free(m, m->enc_rig[i]);
        m->enc_rig[i] = NULL;
    }
}
