/* The decoder: token and position embeddings, pre-LN blocks of causal
 * self-attention over a KV cache, cross-attention over the audio's
 * precomputed keys and values, an MLP; logits of each sequence's last
 * position against the token embedding.
 *
 * Cache layout: per layer K and V of [n_seq, n_text_ctx, n_text_state], all
 * of them views of one block [2 * layers, n_seq, n_text_ctx, n_text_state];
 * sequence s, position p is row s * n_text_ctx + p of a layer's [rows, d]
 * view, so new keys go in with one scatter_rows, and beam reordering is one
 * gather of whole sequences of every layer by a device index. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph_capture.h"
#include "whisper_internal.h"

static void release_step_buffers(sw_whisper_state *st);
static sw_status finish_reorder(sw_whisper_state *st, sw_error *err);

/* Layer i's keys and values as views of the block: group 2i and 2i + 1. */
static void point_caches(sw_whisper_state *st)
{
    const sw_whisper_dims *dm = &st->model->dims;
    int64_t per = (int64_t)st->n_seq * dm->n_text_ctx * dm->n_text_state;
    for (int i = 0; i < dm->n_text_layer; i++) {
        st->k[i] =
            sw_tensor_slice(&st->kv, 2 * i * per, 3, st->n_seq, dm->n_text_ctx, dm->n_text_state);
        st->v[i] = sw_tensor_slice(&st->kv, (2 * i + 1) * per, 3, st->n_seq, dm->n_text_ctx,
                                   dm->n_text_state);
    }
}

sw_status sw_whisper_state_new(sw_whisper *m, const sw_whisper_audio *au, int n_seq,
                               sw_whisper_state **out, sw_error *err)
{
    *out = NULL;
    if (!m || !au || au->model != m)
        return sw_fail(err, SW_ERR_ARG, "whisper state: the audio comes from another model");
    if (n_seq < 1 || n_seq % au->batch != 0)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper state: %d sequences is not a positive multiple of the batch %d",
                       n_seq, au->batch);
    int layers = m->dims.n_text_layer;
    sw_whisper_state *st = calloc(1, sizeof *st);
    if (st) {
        st->k = calloc((size_t)layers, sizeof *st->k);
        st->v = calloc((size_t)layers, sizeof *st->v);
        st->cross_probs = calloc((size_t)layers, sizeof *st->cross_probs);
    }
    if (!st || !st->k || !st->v || !st->cross_probs) {
        if (st) {
            free(st->k);
            free(st->v);
            free(st->cross_probs);
        }
        free(st);
        return sw_fail(err, SW_ERR_NOMEM, "whisper state: out of host memory");
    }
    st->model = m;
    st->audio = au;
    st->n_seq = n_seq;
    sw_backend *be = m->obj.be;
    st->device_length = be->supports && be->supports(be, SW_CAP_DEVICE_LENGTH, 0, 0);
    /* Read per state, so a process can compare both paths (the tests do).
     * Every compute type: the half and int8 products take their scratch
     * from the workspace the backend keeps for its graphs (capture_step). */
    const char *graphs = getenv("SAYWHO_CUDA_GRAPHS");
    st->graphs = st->device_length && be->capture_begin && !(graphs && strcmp(graphs, "0") == 0);
    int64_t shape[4] = {2 * layers, n_seq, m->dims.n_text_ctx, m->dims.n_text_state};
    if (sw_tensor_new(m->obj.be, SW_F32, 4, shape, &st->kv, err)) {
        sw_whisper_state_free(st);
        return err->code;
    }
    point_caches(st);
    *out = st;
    return SW_OK;
}

void sw_whisper_state_free(sw_whisper_state *st)
{
    if (!st)
        return;
    const sw_whisper *m = st->model;
    for (int i = 0; i < m->dims.n_text_layer; i++)
        sw_wh_free(m, &st->cross_probs[i]); /* k and v are views of kv */
    sw_wh_free(m, &st->kv);
    sw_wh_free(m, &st->kv_spare);
    sw_wh_free(m, &st->reorder_ids);
    free(st->host_reorder);
    release_step_buffers(st);
    free(st->k);
    free(st->v);
    free(st->cross_probs);
    free(st);
}

int sw_whisper_state_length(const sw_whisper_state *st)
{
    return st->length;
}

void sw_whisper_state_reset(sw_whisper_state *st)
{
    st->length = 0;
    st->reorder_pending = 0; /* what it would gather is no longer wanted */
}

void sw_whisper_state_capture_cross_attention(sw_whisper_state *st, int on)
{
    st->capture = on != 0;
}

const sw_tensor *sw_whisper_state_cross_attention(const sw_whisper_state *st, int layer)
{
    if (layer < 0 || layer >= st->model->dims.n_text_layer || !st->cross_probs[layer].data)
        return NULL;
    return &st->cross_probs[layer];
}

/* The step buffers' places in st->step. The ids block holds the token ids,
 * positions, cache rows (n = n_seq * n_tok each), each sequence's last
 * index, the length before this decode and, for a search, each sequence's
 * row plan (sw_search_row) side by side, so that one copy takes them up and
 * a captured step reads them at each replay. */
enum { STEP_IDS, STEP_X, STEP_H, STEP_Q, STEP_K, STEP_V, STEP_A, STEP_MID, STEP_LOGITS };

/* Where the ids block's length and row plans begin, in int32 words. */
static int64_t length_at(int n_seq, int n_tok)
{
    return 3 * (int64_t)n_seq * n_tok + n_seq;
}

static int64_t plans_at(int n_seq, int n_tok)
{
    return length_at(n_seq, n_tok) + 1;
}

static void free_graphs(sw_whisper_state *st)
{
    sw_backend *be = st->model->obj.be;
    for (int i = 0; i < 4; i++) {
        if (st->graph[i])
            be->graph_free(be, st->graph[i]);
        st->graph[i] = NULL;
        st->graph_kv[i] = NULL;
    }
}

static void release_step_buffers(sw_whisper_state *st)
{
    free_graphs(st); /* they point into the buffers */
    sw_wh_scratch_free(&st->step);
    sw_wh_free(st->model, &st->search_work);
    free(st->host_ids);
    free(st->host_found);
    st->host_ids = NULL;
    st->host_found = NULL;
    st->step_seq = st->step_tok = 0;
}

/* The buffers of a decode of n_seq x n_tok: made by the first decode of that
 * shape and kept, so the steps of a window (one token each) reuse them. */
static sw_status step_buffers(sw_whisper_state *st, int n_seq, int n_tok, sw_error *err)
{
    if (st->step_seq == n_seq && st->step_tok == n_tok)
        return SW_OK;
    release_step_buffers(st);
    const sw_whisper_dims *dm = &st->model->dims;
    int64_t n = (int64_t)n_seq * n_tok, d = dm->n_text_state;
    int64_t total = plans_at(n_seq, n_tok) + n_seq * SW_SEARCH_ROW_WORDS;
    int64_t shape[2] = {n, d}, mid_shape[2] = {n, 4 * d}, l_shape[2] = {n_seq, dm->n_vocab};
    st->step.be = st->model->obj.be;
    st->host_ids = malloc((size_t)total * sizeof(int32_t));
    if (!st->host_ids)
        return sw_fail(err, SW_ERR_NOMEM, "whisper decode: out of host memory");
    int ok = sw_wh_new(&st->step, SW_I32, 1, &total, err) != NULL;
    for (int i = STEP_X; ok && i <= STEP_A; i++)
        ok = sw_wh_new(&st->step, SW_F32, 2, shape, err) != NULL;
    ok = ok && sw_wh_new(&st->step, SW_F32, 2, mid_shape, err) != NULL;
    ok = ok && sw_wh_new(&st->step, SW_F32, 2, l_shape, err) != NULL;
    if (!ok) {
        release_step_buffers(st);
        return err->code;
    }
    st->step_seq = n_seq;
    st->step_tok = n_tok;
    return SW_OK;
}

/* The search's work and the host side of its results, made by the first
 * search of the step buffers' shape (before a capture, which may not
 * allocate) and kept with them; at SW_SEARCH_MAX_K, so any k fits. */
static sw_status search_buffers(sw_whisper_state *st, sw_error *err)
{
    if (st->search_work.data)
        return SW_OK;
    int64_t words = SW_SEARCH_WORK(st->step_seq, st->model->dims.n_vocab, SW_SEARCH_MAX_K);
    if (!st->host_found)
        st->host_found =
            malloc((size_t)SW_SEARCH_FOUND(st->step_seq, SW_SEARCH_MAX_K) * sizeof(int32_t));
    if (!st->host_found)
        return sw_fail(err, SW_ERR_NOMEM, "whisper search: out of host memory");
    return sw_tensor_new(st->model->obj.be, SW_F32, 1, &words, &st->search_work, err);
}

/* The ids block of this decode, built on the host and copied up; with a
 * search, the rows' plans go in the same copy. */
static sw_status upload_ids(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tok,
                            const sw_wh_search *search, sw_error *err)
{
    size_t n = (size_t)n_seq * (size_t)n_tok;
    int32_t *tok = st->host_ids, *pos = tok + n, *cache_rows = pos + n, *last = cache_rows + n;
    int ctx = st->model->dims.n_text_ctx;
    for (int s = 0; s < n_seq; s++) {
        for (int t = 0; t < n_tok; t++) {
            size_t i = (size_t)s * (size_t)n_tok + (size_t)t;
            if (tokens[i] < 0 || tokens[i] >= st->model->dims.n_vocab)
                return sw_fail(err, SW_ERR_ARG,
                               "whisper decode: token %d (sequence %d, position %d) is outside "
                               "the vocabulary of %d",
                               (int)tokens[i], s, t, st->model->dims.n_vocab);
            tok[i] = tokens[i];
            pos[i] = st->length + t;
            cache_rows[i] = s * ctx + st->length + t;
        }
        last[s] = s * n_tok + n_tok - 1;
    }
    last[n_seq] = st->length;
    int64_t words = plans_at(n_seq, n_tok);
    if (search) {
        memcpy(st->host_ids + words, search->rows, (size_t)n_seq * sizeof *search->rows);
        words += n_seq * SW_SEARCH_ROW_WORDS;
    }
    sw_backend *be = st->model->obj.be;
    return be->upload(be, st->step.t[STEP_IDS].data, st->host_ids, (size_t)words * sizeof(int32_t),
                      err);
}

/* The cross-attention probabilities of layer i when capturing: kept from
 * the last decode where the shape is the same. */
static sw_tensor *cross_probs(sw_whisper_state *st, int i, int n_seq, int n_tok, sw_error *err)
{
    sw_whisper *m = st->model;
    sw_tensor *t = &st->cross_probs[i];
    int64_t p_shape[4] = {n_seq, m->dims.n_text_head, n_tok, m->dims.n_audio_ctx};
    int same = t->data && t->ndim == 4;
    for (int j = 0; same && j < 4; j++)
        same = t->shape[j] == p_shape[j];
    if (same && st->capture)
        return t;
    if (t->data)
        sw_wh_free(m, t);
    if (!st->capture || sw_tensor_new(m->obj.be, SW_F32, 4, p_shape, t, err))
        return NULL;
    return t;
}

/* The decode's ops, from the ids block to the logits: the same whether they
 * run at once or are recorded into a graph. */
static sw_status run_layers(sw_whisper_state *st, int n_seq, int n_tok, sw_error *err)
{
    sw_whisper *m = st->model;
    const sw_whisper_dims *dm = &m->dims;
    int64_t n = (int64_t)n_seq * n_tok, d = dm->n_text_state, ctx = dm->n_text_ctx;
    int heads = dm->n_text_head;
    float scale = 1.0f / sqrtf((float)(d / heads));

    sw_tensor *all = &st->step.t[STEP_IDS];
    sw_tensor tok_v = sw_tensor_slice(all, 0, 1, n, 0, 0);
    sw_tensor pos_v = sw_tensor_slice(all, n, 1, n, 0, 0);
    sw_tensor rows_v = sw_tensor_slice(all, 2 * n, 1, n, 0, 0);
    sw_tensor last_v = sw_tensor_slice(all, 3 * n, 1, n_seq, 0, 0);
    sw_tensor *tok = &tok_v, *pos = &pos_v, *rows = &rows_v, *last = &last_v;
    sw_tensor *x = &st->step.t[STEP_X], *h = &st->step.t[STEP_H], *q = &st->step.t[STEP_Q];
    sw_tensor *k = &st->step.t[STEP_K], *v = &st->step.t[STEP_V], *a = &st->step.t[STEP_A];
    sw_tensor *mid = &st->step.t[STEP_MID], *logits = &st->step.t[STEP_LOGITS];
    if (sw_gather_rows(&m->tok_emb, tok, x, err) || sw_gather_rows(&m->dec_pos, pos, h, err) ||
        sw_add(x, h, x, err))
        return err->code;

    sw_tensor q3 = sw_wh_view3(q, n_seq, n_tok, d), a3 = sw_wh_view3(a, n_seq, n_tok, d);
    /* the keys and the causal offset past the length before this decode:
     * the host's figure, or the device's copy in the ids block */
    sw_attention_params self_p = {heads, st->length + n_tok, st->length, scale, NULL};
    if (st->device_length)
        self_p = (sw_attention_params){heads, n_tok, 0, scale,
                                       (const int32_t *)all->data + length_at(n_seq, n_tok)};
    sw_attention_params cross_p = {heads, dm->n_audio_ctx, -1, scale, NULL};
    for (int i = 0; i < dm->n_text_layer; i++) {
        const sw_wh_block *blk = &m->dec[i];
        sw_tensor k_rows = sw_wh_view2(&st->k[i], n_seq * ctx, d);
        sw_tensor v_rows = sw_wh_view2(&st->v[i], n_seq * ctx, d);
        if (sw_layernorm(x, &blk->attn_ln_w, &blk->attn_ln_b, 1e-5f, h, err) ||
            sw_wh_linear(h, &blk->attn.wq, &blk->attn.bq, q, 0, err) ||
            sw_wh_linear(h, &blk->attn.wk, NULL, k, 0, err) ||
            sw_wh_linear(h, &blk->attn.wv, &blk->attn.bv, v, 0, err) ||
            sw_scatter_rows(k, rows, &k_rows, err) || sw_scatter_rows(v, rows, &v_rows, err) ||
            sw_attention(&q3, &st->k[i], &st->v[i], &self_p, &a3, NULL, err) ||
            sw_wh_linear(a, &blk->attn.wo, &blk->attn.bo, x, 1, err))
            return err->code;

        sw_tensor *probs = cross_probs(st, i, n_seq, n_tok, err);
        if (err->code != SW_OK)
            return err->code;
        if (sw_layernorm(x, &blk->cross_ln_w, &blk->cross_ln_b, 1e-5f, h, err) ||
            sw_wh_linear(h, &blk->cross.wq, &blk->cross.bq, q, 0, err) ||
            sw_attention(&q3, &st->audio->cross_k[i], &st->audio->cross_v[i], &cross_p, &a3, probs,
                         err) ||
            sw_wh_linear(a, &blk->cross.wo, &blk->cross.bo, x, 1, err) ||
            sw_wh_mlp(blk, x, h, mid, err))
            return err->code;
    }

    /* only the last position of each sequence needs logits */
    sw_tensor hl = sw_wh_view2(h, n_seq, d), ql = sw_wh_view2(q, n_seq, d);
    sw_wh_weight out = sw_wh_compute_q8(m->compute) ? m->tok_out : (sw_wh_weight){.w = m->tok_emb};
    if (sw_gather_rows(x, last, &hl, err) ||
        sw_layernorm(&hl, &m->dec_ln_w, &m->dec_ln_b, 1e-5f, &ql, err) ||
        sw_wh_linear(&ql, &out, NULL, logits, 0, err))
        return err->code;
    return SW_OK;
}

/* The search over the logits run_layers left (the last position of each
 * sequence), reading the rows' plans from the ids block: queued, its
 * results left in the search's work for read_found. */
static sw_status run_search(sw_whisper_state *st, int n_seq, int n_tok, const sw_wh_search *s,
                            sw_error *err)
{
    sw_tensor plans = sw_tensor_slice(&st->step.t[STEP_IDS], plans_at(n_seq, n_tok), 1,
                                      n_seq * SW_SEARCH_ROW_WORDS, 0, 0);
    return sw_search_step(st->model->obj.be, &st->step.t[STEP_LOGITS], s->mask, &plans,
                          &st->search_work, s->p, err);
}

/* The search's results in one download (the step's one wait), into the
 * caller's ids, scores and no-speech probabilities. */
static sw_status read_found(sw_whisper_state *st, int n_seq, const sw_wh_search *s, sw_error *err)
{
    sw_backend *be = st->model->obj.be;
    int64_t k = s->p->k, at = SW_SEARCH_FOUND_AT(n_seq, st->model->dims.n_vocab);
    int32_t *found = st->host_found;
    if (be->download(be, found, (float *)st->search_work.data + at,
                     (size_t)SW_SEARCH_FOUND(n_seq, k) * sizeof(int32_t), err))
        return err->code;
    memcpy(s->ids, found, (size_t)(n_seq * k) * sizeof *s->ids);
    memcpy(s->scores, found + n_seq * k, (size_t)(n_seq * k) * sizeof *s->scores);
    for (int r = 0; r < n_seq; r++)
        if (s->rows[r].no_speech >= 0 && s->no_speech)
            memcpy(&s->no_speech[r], found + 2 * n_seq * k + r, sizeof *s->no_speech);
    return SW_OK;
}

/* The graphs end with the search they were captured with, or none: a
 * decode that asks for another drops them first. */
static void match_search(sw_whisper_state *st, const sw_wh_search *s)
{
    int same = st->graph_searches == (s != NULL);
    if (same && s)
        same = st->graph_mask == s->mask->data && st->graph_params.k == s->p->k &&
               st->graph_params.log_softmax == s->p->log_softmax &&
               st->graph_params.timestamp_begin == s->p->timestamp_begin &&
               st->graph_params.temperature == s->p->temperature;
    if (same)
        return;
    free_graphs(st);
    st->graph_searches = s != NULL;
    st->graph_mask = s ? s->mask->data : NULL;
    if (s)
        st->graph_params = *s->p;
}

/* The pending reorder's gather: kv from kv_spare by reorder_ids, whole
 * sequences of every layer (whole_sequences below). */
static sw_status gather_reordered(sw_whisper_state *st, sw_error *err)
{
    const sw_whisper_dims *dm = &st->model->dims;
    int64_t rows = 2 * (int64_t)dm->n_text_layer * st->n_seq;
    int64_t seq_len = (int64_t)dm->n_text_ctx * dm->n_text_state;
    sw_tensor table = sw_wh_view2(&st->kv_spare, rows, seq_len);
    sw_tensor out = sw_wh_view2(&st->kv, rows, seq_len);
    return sw_gather_rows(&table, &st->reorder_ids, &out, err);
}

/* Run at once what a graph would have done first. */
static sw_status finish_reorder(sw_whisper_state *st, sw_error *err)
{
    if (!st->reorder_pending)
        return SW_OK;
    if (gather_reordered(st, err))
        return err->code;
    st->reorder_pending = 0;
    return SW_OK;
}

/* What a step's graph records: the pending reorder's gather (if any), the
 * layers and the search (if any). */
typedef struct {
    sw_whisper_state *st;
    int n_seq, gathers;
    const sw_wh_search *search;
} step_ops;

static sw_status record_step(void *ctx, sw_error *err)
{
    const step_ops *o = ctx;
    if (o->gathers && gather_reordered(o->st, err))
        return err->code;
    if (run_layers(o->st, o->n_seq, 1, err))
        return err->code;
    if (o->search && run_search(o->st, o->n_seq, 1, o->search, err))
        return err->code;
    return SW_OK;
}

/* Captured again while the workspace grows to the step's products
 * (runtime/graph_capture.c): a step asks two sizes at most (d and 4d wide
 * rows), so the first step captured on a backend takes three captures, and
 * one where the encoder's window graph grew the workspace to its own
 * products (1,500 rows a window) first. */
static sw_status capture_step(sw_whisper_state *st, int n_seq, int gathers,
                              const sw_wh_search *search, sw_graph **out, sw_error *err)
{
    step_ops o = {st, n_seq, gathers, search};
    return sw_capture_graph(st->model->obj.be, record_step, &o, out, err);
}

/* The one-token step as a graph: the pending reorder's gather (if any), the
 * layers and the search (if any), captured at the first step of its kind
 * and replayed after. Its pointers are the step buffers', the search's work
 * and mask, the block kv and its spare, the audio's keys and the weights,
 * all of which outlive it; what changes per step (tokens, positions, cache
 * rows, the length, the rows' plans, the reorder's index) is uploaded into
 * those buffers before the replay. */
static sw_status replay_step(sw_whisper_state *st, int n_seq, const sw_wh_search *search,
                             sw_error *err)
{
    sw_backend *be = st->model->obj.be;
    match_search(st, search);
    int gathers = st->reorder_pending, slot = -1;
    for (int i = 0; i < 4 && slot < 0; i++)
        if (st->graph[i] && st->graph_kv[i] == st->kv.data && st->graph_gathers[i] == gathers)
            slot = i;
    if (slot < 0) {
        for (int i = 0; i < 4 && slot < 0; i++)
            if (!st->graph[i])
                slot = i;
        if (slot < 0) { /* not expected: two blocks, with and without a gather */
            free_graphs(st);
            slot = 0;
        }
        sw_graph *g = NULL;
        if (capture_step(st, n_seq, gathers, search, &g, err))
            return err->code;
        st->graph[slot] = g;
        st->graph_kv[slot] = st->kv.data;
        st->graph_gathers[slot] = gathers;
    }
    if (be->graph_launch(be, st->graph[slot], err))
        return err->code;
    st->reorder_pending = 0;
    return SW_OK;
}

static sw_status run_decoder(sw_whisper_state *st, int n_seq, int n_tok, float *logits_out,
                             const sw_wh_search *search, sw_error *err)
{
    if (st->graphs && n_tok == 1 && !st->capture) {
        if (replay_step(st, n_seq, search, err))
            return err->code;
    } else if (finish_reorder(st, err) || run_layers(st, n_seq, n_tok, err) ||
               (search && run_search(st, n_seq, n_tok, search, err))) {
        return err->code;
    }
    if (search)
        return read_found(st, n_seq, search, err);
    const sw_tensor *logits = &st->step.t[STEP_LOGITS];
    if (logits_out)
        st->model->obj.be->download(st->model->obj.be, logits_out, logits->data,
                                    sw_tensor_nbytes(logits), err);
    return err->code;
}

/* logits_out NULL: the logits stay on the device, in the step buffers;
 * with a search, only its results come down */
static sw_status decode(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                        float *logits_out, const sw_wh_search *search, sw_error *err)
{
    if (n_seq != st->n_seq)
        return sw_fail(err, SW_ERR_ARG, "whisper decode: %d sequences given, the state has %d",
                       n_seq, st->n_seq);
    if (n_tokens < 1 || st->length + n_tokens > st->model->dims.n_text_ctx)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper decode: %d tokens after %d would pass the %d positions of the "
                       "text context",
                       n_tokens, st->length, st->model->dims.n_text_ctx);
    if (step_buffers(st, n_seq, n_tokens, err) == SW_OK &&
        (!search || search_buffers(st, err) == SW_OK) &&
        upload_ids(st, tokens, n_seq, n_tokens, search, err) == SW_OK &&
        run_decoder(st, n_seq, n_tokens, logits_out, search, err) == SW_OK)
        st->length += n_tokens;
    return err->code;
}

sw_status sw_whisper_decode(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                            float *logits_out, sw_error *err)
{
    if (!st || !tokens || !logits_out)
        return sw_fail(err, SW_ERR_ARG, "whisper decode: state, tokens and logits needed");
    return decode(st, tokens, n_seq, n_tokens, logits_out, NULL, err);
}

sw_status sw_wh_decode_device(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                              const sw_tensor **logits, sw_error *err)
{
    *logits = NULL;
    if (!st || !tokens)
        return sw_fail(err, SW_ERR_ARG, "whisper decode: state and tokens needed");
    if (decode(st, tokens, n_seq, n_tokens, NULL, NULL, err) == SW_OK)
        *logits = &st->step.t[STEP_LOGITS];
    return err->code;
}

sw_status sw_wh_decode_search(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                              const sw_wh_search *search, sw_error *err)
{
    if (!st || !tokens || !search || !search->mask || !search->p || !search->rows || !search->ids ||
        !search->scores)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper search: state, tokens, mask, rows and outputs needed");
    if (search->p->k < 1 || search->p->k > SW_SEARCH_MAX_K)
        return sw_fail(err, SW_ERR_ARG, "whisper search: k %d outside 1..%d", search->p->k,
                       SW_SEARCH_MAX_K);
    return decode(st, tokens, n_seq, n_tokens, NULL, search, err);
}

/* On a backend that captures graphs (a GPU): whole sequences (all
 * n_text_ctx positions) of every layer's keys and values in one gather by a
 * device index of 2 * layers * n entries, so that a reorder is one launch
 * whatever the length, with no row list built per position (issue 37).
 * Onto itself it writes the spare block, and the two trade places. */
static sw_status whole_sequences(sw_whisper_state *dst, const sw_whisper_state *src,
                                 const int *src_index, int n, sw_error *err)
{
    sw_whisper *m = dst->model;
    sw_backend *be = m->obj.be;
    int64_t groups = 2 * (int64_t)m->dims.n_text_layer;
    int64_t seq_len = (int64_t)m->dims.n_text_ctx * m->dims.n_text_state, count = groups * n;
    sw_tensor *target = &dst->kv;
    if (dst == src) {
        /* a reorder not yet gathered is done first: reorders compose */
        if (finish_reorder(dst, err))
            return err->code;
        if (!dst->kv_spare.data && sw_tensor_new(be, SW_F32, 4, dst->kv.shape, &dst->kv_spare, err))
            return err->code;
        target = &dst->kv_spare;
    }
    if (!dst->reorder_ids.data) {
        dst->host_reorder = malloc((size_t)count * sizeof(int32_t));
        if (!dst->host_reorder)
            return sw_fail(err, SW_ERR_NOMEM, "whisper state copy: out of host memory");
        if (sw_tensor_new(be, SW_I32, 1, &count, &dst->reorder_ids, err))
            return err->code;
    }
    for (int64_t g = 0; g < groups; g++)
        for (int s = 0; s < n; s++)
            dst->host_reorder[g * n + s] = (int32_t)(g * src->n_seq + src_index[s]);
    sw_tensor table = sw_wh_view2(&src->kv, groups * src->n_seq, seq_len);
    sw_tensor out = sw_wh_view2(target, count, seq_len);
    if (be->upload(be, dst->reorder_ids.data, dst->host_reorder, (size_t)count * sizeof(int32_t),
                   err))
        return err->code;
    if (dst == src && dst->graphs) {
        /* the next step's graph gathers it (replay_step), so that a beam's
         * step stays one graph */
        sw_tensor was = dst->kv;
        dst->kv = dst->kv_spare;
        dst->kv_spare = was;
        point_caches(dst);
        dst->reorder_pending = 1;
        return SW_OK;
    }
    if (sw_gather_rows(&table, &dst->reorder_ids, &out, err))
        return err->code;
    if (dst == src) {
        sw_tensor was = dst->kv;
        dst->kv = dst->kv_spare;
        dst->kv_spare = was;
        point_caches(dst);
    }
    return SW_OK;
}

/* Elsewhere (the CPU, where a launch costs nothing and bandwidth is short):
 * the filled positions only, gathered from every layer at once into a
 * scratch and scattered to their places; all are gathered before any is
 * written, so a state may be copied onto itself. */
static sw_status filled_rows(sw_whisper_state *dst, const sw_whisper_state *src,
                             const int *src_index, int n, sw_error *err)
{
    sw_whisper *m = dst->model;
    int64_t groups = 2 * (int64_t)m->dims.n_text_layer, len = src->length;
    int64_t ctx = m->dims.n_text_ctx, d = m->dims.n_text_state;
    size_t count = (size_t)(groups * n * len);
    /* from and to side by side: one copy up */
    int32_t *from = malloc(2 * count * sizeof(int32_t)), *to = from ? from + count : NULL;
    if (!from)
        return sw_fail(err, SW_ERR_NOMEM, "whisper state copy: out of host memory");
    size_t i = 0;
    for (int64_t g = 0; g < groups; g++)
        for (int q = 0; q < n; q++)
            for (int64_t t = 0; t < len; t++, i++) {
                from[i] = (int32_t)((g * src->n_seq + src_index[q]) * ctx + t);
                to[i] = (int32_t)((g * n + q) * ctx + t);
            }
    sw_wh_scratch s = {m->obj.be, {{0}}, 0};
    int64_t shape[2] = {(int64_t)count, d};
    sw_tensor *both = sw_wh_ids(&s, from, 2 * (int64_t)count, err);
    sw_tensor *tmp = both ? sw_wh_new(&s, SW_F32, 2, shape, err) : NULL;
    if (tmp) {
        sw_tensor from_v = sw_tensor_slice(both, 0, 1, (int64_t)count, 0, 0);
        sw_tensor to_v = sw_tensor_slice(both, (int64_t)count, 1, (int64_t)count, 0, 0);
        sw_tensor from_rows = sw_wh_view2(&src->kv, groups * src->n_seq * ctx, d);
        sw_tensor to_rows = sw_wh_view2(&dst->kv, groups * n * ctx, d);
        if (sw_gather_rows(&from_rows, &from_v, tmp, err) == SW_OK)
            sw_scatter_rows(tmp, &to_v, &to_rows, err);
    }
    sw_wh_scratch_free(&s);
    free(from);
    return err->code;
}

/* dst's sequence s becomes src's sequence src_index[s]; the indices are
 * checked here, the counts by the callers. */
static sw_status copy_rows(sw_whisper_state *dst, const sw_whisper_state *src, const int *src_index,
                           int n, sw_error *err)
{
    int identity = src == dst;
    for (int s = 0; s < n; s++) {
        if (src_index[s] < 0 || src_index[s] >= src->n_seq)
            return sw_fail(err, SW_ERR_ARG, "whisper state copy: index %d outside 0..%d",
                           src_index[s], src->n_seq - 1);
        identity = identity && src_index[s] == s;
    }
    if (identity)
        return SW_OK;
    /* a reorder src deferred is its own work, not a change of what it
     * holds: done before another state reads its block */
    if (src != dst && finish_reorder((sw_whisper_state *)src, err))
        return err->code;
    if (src->length == 0) {
        dst->length = 0;
        return SW_OK;
    }
    /* a backend that captures graphs is one whose launches cost */
    sw_backend *be = dst->model->obj.be;
    if ((be->capture_begin ? whole_sequences : filled_rows)(dst, src, src_index, n, err))
        return err->code;
    dst->length = src->length;
    return SW_OK;
}

sw_status sw_whisper_state_copy(sw_whisper_state *dst, const sw_whisper_state *src,
                                const int *src_index, int n, sw_error *err)
{
    if (!dst || !src || !src_index || n != dst->n_seq)
        return sw_fail(err, SW_ERR_ARG, "whisper state copy: %d indices for %d sequences", n,
                       dst ? dst->n_seq : 0);
    if (src->model != dst->model || src->audio != dst->audio)
        return sw_fail(err, SW_ERR_ARG, "whisper state copy: the states read different audio");
    return copy_rows(dst, src, src_index, n, err);
}

sw_status sw_wh_state_narrow(const sw_whisper_state *src, const sw_whisper_audio *audio,
                             const int *src_index, int n, sw_whisper_state **out, sw_error *err)
{
    if (sw_whisper_state_new(src->model, audio, n, out, err))
        return err->code;
    (*out)->capture = src->capture;
    if (copy_rows(*out, src, src_index, n, err)) {
        sw_whisper_state_free(*out);
        *out = NULL;
    }
    return err->code;
}

sw_status sw_whisper_state_reorder(sw_whisper_state *st, const int *src_index, int n, sw_error *err)
{
    if (!st || !src_index || n != st->n_seq)
        return sw_fail(err, SW_ERR_ARG, "whisper reorder: %d indices for %d sequences", n,
                       st ? st->n_seq : 0);
    return sw_whisper_state_copy(st, st, src_index, n, err);
}
