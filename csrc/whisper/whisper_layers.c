/* Helpers the encoder and decoder share: views, scratch, linear, MLP. */
#include <string.h>

#include "whisper_internal.h"

void sw_wh_free(const sw_whisper *m, sw_tensor *t)
{
    if (m->borrows_halves && t->dtype == SW_F16) {
        memset(t, 0, sizeof *t); /* the caller's bytes */
        return;
    }
    sw_model_object_free_weight(&m->obj, t);
}

sw_tensor sw_wh_view2(const sw_tensor *t, int64_t d0, int64_t d1)
{
    sw_tensor v = *t;
    v.ndim = 2;
    v.shape[0] = d0;
    v.shape[1] = d1;
    return v;
}

sw_tensor sw_wh_view3(const sw_tensor *t, int64_t d0, int64_t d1, int64_t d2)
{
    sw_tensor v = sw_wh_view2(t, d0, d1);
    v.ndim = 3;
    v.shape[2] = d2;
    return v;
}

sw_tensor *sw_wh_new(sw_wh_scratch *s, sw_dtype dtype, int ndim, const int64_t *shape,
                     sw_error *err)
{
    if (s->n >= SW_WH_MAX_SCRATCH) {
        sw_fail(err, SW_ERR_INTERNAL, "whisper: more than %d scratch tensors", SW_WH_MAX_SCRATCH);
        return NULL;
    }
    sw_tensor *t = &s->t[s->n];
    if (sw_tensor_new(s->be, dtype, ndim, shape, t, err) != SW_OK)
        return NULL;
    s->n++;
    return t;
}

void sw_wh_scratch_free(sw_wh_scratch *s)
{
    for (int i = 0; i < s->n; i++)
        sw_tensor_free(&s->t[i]);
    s->n = 0;
}

sw_tensor *sw_wh_ids(sw_wh_scratch *s, const int32_t *ids, int64_t n, sw_error *err)
{
    sw_tensor *t = sw_wh_new(s, SW_I32, 1, &n, err);
    if (t && s->be->upload(s->be, t->data, ids, (size_t)n * sizeof(int32_t), err) != SW_OK)
        return NULL;
    return t;
}

void sw_wh_weight_free(const sw_whisper *m, sw_wh_weight *w)
{
    sw_wh_free(m, &w->w);
    sw_wh_free(m, &w->scale);
    sw_wh_free(m, &w->sum);
}

sw_status sw_wh_linear(const sw_tensor *x, const sw_wh_weight *w, const sw_tensor *b, sw_tensor *y,
                       int accumulate, sw_error *err)
{
    float beta = accumulate ? 1.0f : 0.0f;
    int q8 = w->w.dtype == SW_I8 || w->w.dtype == SW_I8_PACKED;
    sw_status st = q8 ? sw_matmul_q8(x, &w->w, &w->scale, &w->sum, y, beta, err)
                      : sw_matmul(x, &w->w, y, 1, 1.0f, beta, err);
    if (st != SW_OK)
        return st;
    if (b && b->data)
        return sw_add(y, b, y, err);
    return SW_OK;
}

sw_status sw_wh_mlp(const sw_wh_block *blk, sw_tensor *x, sw_tensor *h, sw_tensor *mid,
                    sw_error *err)
{
    if (sw_layernorm(x, &blk->mlp_ln_w, &blk->mlp_ln_b, 1e-5f, h, err) ||
        sw_wh_linear(h, &blk->mlp1_w, &blk->mlp1_b, mid, 0, err) || sw_gelu(mid, mid, err) ||
        sw_wh_linear(mid, &blk->mlp2_w, &blk->mlp2_b, x, 1, err))
        return err->code;
    return SW_OK;
}
