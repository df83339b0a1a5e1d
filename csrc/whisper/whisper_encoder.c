/* The encoder: two convolutions with GELU, the sinusoidal positions, pre-LN
 * blocks over all batch items' frames at once (every linear is one sgemm),
 * ln_post; then every decoder layer's cross-attention keys and values, which
 * stay fixed for the whole decoding of this audio. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "whisper_internal.h"

/* x += attn(attn_ln(x)) for x [B, T, d]; h, q, k, v, a are [B, T, d] scratch. */
static sw_status self_attention(const sw_whisper *m, const sw_wh_block *blk, sw_tensor *x,
                                sw_tensor *h, sw_tensor *q, sw_tensor *k, sw_tensor *v,
                                sw_tensor *a, sw_error *err)
{
    int64_t b = x->shape[0], t = x->shape[1], d = x->shape[2];
    sw_tensor x2 = sw_wh_view2(x, b * t, d), h2 = sw_wh_view2(h, b * t, d);
    sw_tensor q2 = sw_wh_view2(q, b * t, d), k2 = sw_wh_view2(k, b * t, d);
    sw_tensor v2 = sw_wh_view2(v, b * t, d), a2 = sw_wh_view2(a, b * t, d);
    int heads = m->dims.n_audio_head;
    sw_attention_params p = {heads, t, -1, 1.0f / sqrtf((float)(d / heads)), NULL};
    if (sw_layernorm(&x2, &blk->attn_ln_w, &blk->attn_ln_b, 1e-5f, &h2, err) ||
        sw_wh_linear(&h2, &blk->attn.wq, &blk->attn.bq, &q2, 0, err) ||
        sw_wh_linear(&h2, &blk->attn.wk, NULL, &k2, 0, err) ||
        sw_wh_linear(&h2, &blk->attn.wv, &blk->attn.bv, &v2, 0, err) ||
        sw_attention(q, k, v, &p, a, NULL, err) ||
        sw_wh_linear(&a2, &blk->attn.wo, &blk->attn.bo, &x2, 1, err))
        return err->code;
    return SW_OK;
}

/* Row ids that gather [B, T, H, d_head] (rows of d_head) into
 * [B, H, T, d_head]: output row (b, h, t) is input row (b, t, h). */
static sw_tensor *heads_first_ids(sw_wh_scratch *s, int64_t b, int64_t t, int64_t heads,
                                  sw_error *err)
{
    int64_t n = b * heads * t;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    if (!ids) {
        sw_fail(err, SW_ERR_NOMEM, "whisper encode: out of host memory");
        return NULL;
    }
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < t; i++)
                ids[(bi * heads + h) * t + i] = (int32_t)((bi * t + i) * heads + h);
    sw_tensor *out = sw_wh_ids(s, ids, n, err);
    free(ids);
    return out;
}

/* Where attention takes them (the CPU), the keys and values are kept head
 * by head, [B, H, T, d_head]: a decoding step reads each head's 1500 rows as
 * one run of 384 KB where the [B, T, H * d_head] form gave it 256 bytes in
 * every 1536, a stride that two cores read at half memory's speed. The same
 * sums, the same bits. */
static int kv_head_major(const sw_whisper *m)
{
    sw_backend *be = m->obj.be;
    return m->dims.n_text_state == m->dims.n_audio_state &&
           sw_supports(be, SW_CAP_HEAD_MAJOR_KV, 0, 0);
}

sw_whisper_audio *sw_wh_audio_alloc(sw_whisper *m, int batch)
{
    sw_whisper_audio *au = calloc(1, sizeof *au);
    if (au) {
        au->cross_k = calloc((size_t)m->dims.n_text_layer, sizeof *au->cross_k);
        au->cross_v = calloc((size_t)m->dims.n_text_layer, sizeof *au->cross_v);
    }
    if (!au || !au->cross_k || !au->cross_v) {
        if (au) {
            free(au->cross_k);
            free(au->cross_v);
        }
        free(au);
        return NULL;
    }
    au->model = m;
    au->batch = batch;
    return au;
}

sw_status sw_wh_enc_outputs_new(sw_whisper_audio *au, sw_error *err)
{
    const sw_whisper_dims *dm = &au->model->dims;
    sw_backend *be = au->model->obj.be;
    int64_t B = au->batch, T = dm->n_audio_ctx, text_d = dm->n_text_state;
    int64_t heads = dm->n_text_head;
    int64_t x_shape[3] = {B, T, dm->n_audio_state};
    int64_t kv_shape[4] = {B, T, text_d, 0}, hm_shape[4] = {B, heads, T, text_d / heads};
    int hm = kv_head_major(au->model);
    if (sw_tensor_new(be, SW_F32, 3, x_shape, &au->features, err))
        return err->code;
    for (int i = 0; i < dm->n_text_layer; i++)
        if (sw_tensor_new(be, SW_F32, hm ? 4 : 3, hm ? hm_shape : kv_shape, &au->cross_k[i], err) ||
            sw_tensor_new(be, SW_F32, hm ? 4 : 3, hm ? hm_shape : kv_shape, &au->cross_v[i], err))
            return err->code;
    return SW_OK;
}

sw_status sw_wh_enc_buffers_new(sw_whisper *m, int batch, int with_cols, sw_wh_enc_buffers *b,
                                sw_error *err)
{
    const sw_whisper_dims *dm = &m->dims;
    int64_t B = batch, frames = 2 * (int64_t)dm->n_audio_ctx, T = dm->n_audio_ctx;
    int64_t d = dm->n_audio_state;
    memset(b, 0, sizeof *b);
    b->s.be = m->obj.be;
    int64_t mel_shape[3] = {B, dm->n_mels, frames}, tm_shape[3] = {B, frames, dm->n_mels};
    int64_t c1_shape[3] = {B, frames, d}, x_shape[3] = {B, T, d}, mid_shape[2] = {B * T, 4 * d};
    sw_tensor **act[] = {&b->x, &b->h, &b->q, &b->k, &b->v, &b->a};
    if (!(b->mel = sw_wh_new(&b->s, SW_F32, 3, mel_shape, err)) ||
        !(b->mel_tm = sw_wh_new(&b->s, SW_F32, 3, tm_shape, err)) ||
        !(b->c1 = sw_wh_new(&b->s, SW_F32, 3, c1_shape, err)))
        return err->code;
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++)
        if (!(*act[i] = sw_wh_new(&b->s, SW_F32, 3, x_shape, err)))
            return err->code;
    if (!(b->mid = sw_wh_new(&b->s, SW_F32, 2, mid_shape, err)))
        return err->code;
    if (with_cols) {
        /* the larger of the two convolutions' columns, in float32 entries */
        size_t c1 = SW_CONV1D_WORK_BYTES(frames, dm->n_mels, m->conv1_w.shape[2]);
        size_t c2 = SW_CONV1D_WORK_BYTES(T, d, m->conv2_w.shape[2]);
        int64_t n = (int64_t)((c1 > c2 ? c1 : c2) / sizeof(float));
        if (!(b->cols = sw_wh_new(&b->s, SW_F32, 1, &n, err)))
            return err->code;
    }
    if (kv_head_major(m) && !(b->ids = heads_first_ids(&b->s, B, T, dm->n_text_head, err)))
        return err->code;
    return SW_OK;
}

void sw_wh_enc_buffers_free(const sw_whisper *m, sw_wh_enc_buffers *b)
{
    for (int i = 0; i < b->s.n; i++)
        sw_wh_free(m, &b->s.t[i]);
    memset(b, 0, sizeof *b);
}

/* The encoder's ops from b->mel to the audio's outputs: the same whether
 * they run at once or are recorded into a graph (nothing allocated, copied
 * or waited for). */
sw_status sw_wh_enc_run(sw_whisper *m, sw_wh_enc_buffers *b, sw_whisper_audio *au, sw_error *err)
{
    const sw_whisper_dims *dm = &m->dims;
    int64_t B = au->batch, T = dm->n_audio_ctx, d = dm->n_audio_state;
    sw_tensor *x = b->x, *h = b->h, *q = b->q, *k = b->k, *v = b->v, *a = b->a;
    if (sw_transpose(b->mel, b->mel_tm, err) ||
        sw_conv1d_work(b->mel_tm, &m->conv1_w, &m->conv1_b, 1, 1, b->cols, b->c1, err) ||
        sw_gelu(b->c1, b->c1, err) ||
        sw_conv1d_work(b->c1, &m->conv2_w, &m->conv2_b, 2, 1, b->cols, x, err) ||
        sw_gelu(x, x, err) || sw_add(x, &m->enc_pos, x, err))
        return err->code;

    sw_tensor x2 = sw_wh_view2(x, B * T, d), h2 = sw_wh_view2(h, B * T, d);
    for (int i = 0; i < dm->n_audio_layer; i++)
        if (self_attention(m, &m->enc[i], x, h, q, k, v, a, err) ||
            sw_wh_mlp(&m->enc[i], &x2, &h2, b->mid, err))
            return err->code;
    if (sw_layernorm(x, &m->enc_ln_w, &m->enc_ln_b, 1e-5f, &au->features, err))
        return err->code;

    sw_tensor f2 = sw_wh_view2(&au->features, B * T, d);
    int64_t text_d = dm->n_text_state, heads = dm->n_text_head, dh = text_d / heads;
    for (int i = 0; i < dm->n_text_layer; i++) {
        const sw_wh_attn *c = &m->dec[i].cross;
        /* the products straight into place, or into scratch q and k (free
         * now) and then gathered head by head */
        sw_tensor k2 = sw_wh_view2(b->ids ? q : &au->cross_k[i], B * T, text_d);
        sw_tensor v2 = sw_wh_view2(b->ids ? k : &au->cross_v[i], B * T, text_d);
        if (sw_wh_linear(&f2, &c->wk, NULL, &k2, 0, err) ||
            sw_wh_linear(&f2, &c->wv, &c->bv, &v2, 0, err))
            return err->code;
        if (b->ids) {
            sw_tensor k_rows = sw_wh_view2(&k2, B * T * heads, dh);
            sw_tensor v_rows = sw_wh_view2(&v2, B * T * heads, dh);
            sw_tensor k_out = sw_wh_view2(&au->cross_k[i], B * heads * T, dh);
            sw_tensor v_out = sw_wh_view2(&au->cross_v[i], B * heads * T, dh);
            if (sw_gather_rows(&k_rows, b->ids, &k_out, err) ||
                sw_gather_rows(&v_rows, b->ids, &v_out, err))
                return err->code;
        }
    }
    return SW_OK;
}

int sw_whisper_audio_batch(const sw_whisper_audio *au)
{
    return au->batch;
}

/* Items first .. first + count - 1 of a [batch, ...] tensor as
 * [count, ...]: same backend (the ops check it), never freed (the audio it
 * belongs to is marked borrowed). */
static sw_tensor items_view(const sw_tensor *t, int batch, int first, int count)
{
    sw_tensor v = *t;
    size_t bytes = sw_tensor_nbytes(t) / (size_t)batch;
    v.data = (char *)t->data + (size_t)first * bytes;
    v.shape[0] = count;
    return v;
}

sw_status sw_wh_audio_items(const sw_whisper_audio *au, int first, int count,
                            sw_whisper_audio **out, sw_error *err)
{
    *out = NULL;
    if (!au || first < 0 || count < 1 || first + count > au->batch)
        return sw_fail(err, SW_ERR_ARG, "whisper audio: items %d..%d of a batch of %d", first,
                       first + count - 1, au ? au->batch : 0);
    int layers = au->model->dims.n_text_layer;
    sw_whisper_audio *v = sw_wh_audio_alloc(au->model, count);
    if (!v)
        return sw_fail(err, SW_ERR_NOMEM, "whisper audio: out of host memory");
    v->borrowed = 1;
    v->features = items_view(&au->features, au->batch, first, count);
    for (int i = 0; i < layers; i++) {
        v->cross_k[i] = items_view(&au->cross_k[i], au->batch, first, count);
        v->cross_v[i] = items_view(&au->cross_v[i], au->batch, first, count);
    }
    *out = v;
    return SW_OK;
}

sw_status sw_whisper_audio_item(const sw_whisper_audio *au, int item, sw_whisper_audio **out,
                                sw_error *err)
{
    return sw_wh_audio_items(au, item, 1, out, err);
}

sw_status sw_wh_audio_swap(const sw_whisper_audio *au, int a, int b, sw_error *err)
{
    if (a == b)
        return SW_OK;
    const sw_whisper *m = au->model;
    int64_t t = m->dims.n_audio_ctx, d = m->dims.n_text_state;
    int32_t *from = malloc((size_t)(2 * t) * sizeof *from);
    int32_t *to = malloc((size_t)(2 * t) * sizeof *to);
    sw_wh_scratch s = {m->obj.be, {{0}}, 0};
    if (!from || !to) {
        sw_fail(err, SW_ERR_NOMEM, "whisper audio: out of host memory");
    } else {
        /* item a's rows and b's gathered, then written back the other way */
        for (int64_t i = 0; i < t; i++) {
            from[i] = to[t + i] = (int32_t)(a * t + i);
            from[t + i] = to[i] = (int32_t)(b * t + i);
        }
        int64_t shape[2] = {2 * t, d};
        sw_tensor *from_t = sw_wh_ids(&s, from, 2 * t, err);
        sw_tensor *to_t = from_t ? sw_wh_ids(&s, to, 2 * t, err) : NULL;
        sw_tensor *tmp = to_t ? sw_wh_new(&s, SW_F32, 2, shape, err) : NULL;
        for (int i = 0; tmp && i < m->dims.n_text_layer && err->code == SW_OK; i++) {
            sw_tensor *kv[2] = {&au->cross_k[i], &au->cross_v[i]};
            for (int c = 0; c < 2 && err->code == SW_OK; c++) {
                sw_tensor rows = sw_wh_view2(kv[c], (int64_t)au->batch * t, d);
                if (sw_gather_rows(&rows, from_t, tmp, err) == SW_OK)
                    sw_scatter_rows(tmp, to_t, &rows, err);
            }
        }
    }
    sw_wh_scratch_free(&s);
    free(from);
    free(to);
    return err->code;
}

const sw_tensor *sw_whisper_audio_features(const sw_whisper_audio *au)
{
    return &au->features;
}

void sw_whisper_audio_free(sw_whisper_audio *au)
{
    if (!au)
        return;
    const sw_whisper *m = au->model;
    /* a view's tensors are another audio's, a rig's are lent to it */
    int owns = !au->borrowed && !au->lent;
    for (int i = 0; i < m->dims.n_text_layer && owns; i++) {
        sw_wh_free(m, &au->cross_k[i]);
        sw_wh_free(m, &au->cross_v[i]);
    }
    if (owns)
        sw_wh_free(m, &au->features);
    if (au->lent)
        *au->lent = 0; /* the rig's outputs are free for the next window */
    free(au->cross_k);
    free(au->cross_v);
    free(au);
}
