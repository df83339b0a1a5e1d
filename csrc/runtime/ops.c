#include "ops.h"

#include "fused_ops.h"

static sw_status same_backend(const char *op, const sw_tensor *a, const sw_tensor *b, sw_error *err)
{
    if (!a->backend || !b->backend)
        return sw_fail(err, SW_ERR_ARG, "%s: operand has no backend (a borrowed view?)", op);
    if (a->backend != b->backend)
        return sw_fail(err, SW_ERR_ARG, "%s: operands live on different backends (%s, %s)", op,
                       a->backend->name, b->backend->name);
    return SW_OK;
}

static sw_status need_f32(const char *op, const sw_tensor *t, sw_error *err)
{
    if (t->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG, "%s: expects float32, got %s", op, sw_dtype_name(t->dtype));
    return SW_OK;
}

/* float16 / bfloat16 weights (compute_type "float16", "bfloat16"): a backend
 * with SW_CAP_HALF_WEIGHTS takes them in every op (the CUDA backend's tensor
 * cores); `narrow_cap` names the one use a backend without it may still admit
 * (SW_CAP_HALF_TRANSPOSED_B, SW_CAP_HALF_TABLE: the CPU widens as it reads),
 * 0 for none. */
static sw_status need_f32_or_half(const char *op, const sw_tensor *t, sw_capability narrow_cap,
                                  sw_error *err)
{
    if (t->dtype != SW_F16 && t->dtype != SW_BF16)
        return need_f32(op, t, err);
    sw_backend *be = t->backend;
    if (be && (sw_supports(be, SW_CAP_HALF_WEIGHTS, 0, 0) ||
               (narrow_cap && sw_supports(be, narrow_cap, t->dtype, 0))))
        return SW_OK;
    return sw_fail(err, SW_ERR_ARG, "%s: the %s backend does not take %s operands here", op,
                   be ? be->name : "borrowed", sw_dtype_name(t->dtype));
}

static sw_status unary_check(const char *op, const sw_tensor *a, const sw_tensor *out,
                             sw_error *err)
{
    if (same_backend(op, a, out, err) || need_f32(op, a, err))
        return err->code;
    if (!sw_tensor_same_shape(a, out))
        return sw_fail(err, SW_ERR_ARG, "%s: output shape differs from input", op);
    return SW_OK;
}

sw_status sw_matmul(const sw_tensor *a, const sw_tensor *b, sw_tensor *c, int trans_b, float alpha,
                    float beta, sw_error *err)
{
    if (same_backend("matmul", a, b, err) || same_backend("matmul", a, c, err))
        return err->code;
    if (need_f32_or_half("matmul", b, trans_b && a->dtype == SW_F32 ? SW_CAP_HALF_TRANSPOSED_B : 0,
                         err) ||
        need_f32("matmul", c, err))
        return err->code;
    if (a->dtype != b->dtype && need_f32("matmul", a, err))
        return err->code;
    if (a->ndim != 2 || b->ndim != 2 || c->ndim != 2)
        return sw_fail(err, SW_ERR_ARG, "matmul: operands must be matrices");
    int64_t m = a->shape[0], k = a->shape[1];
    int64_t kb = trans_b ? b->shape[1] : b->shape[0];
    int64_t n = trans_b ? b->shape[0] : b->shape[1];
    if (kb != k || c->shape[0] != m || c->shape[1] != n)
        return sw_fail(err, SW_ERR_ARG,
                       "matmul: shapes [%lld,%lld] x [%lld,%lld]%s -> [%lld,%lld] do not fit",
                       (long long)m, (long long)k, (long long)b->shape[0], (long long)b->shape[1],
                       trans_b ? "^T" : "", (long long)c->shape[0], (long long)c->shape[1]);
    return a->backend->matmul(a->backend, a, b, c, trans_b, alpha, beta, err);
}

sw_status sw_matmul_q8(const sw_tensor *a, const sw_tensor *w, const sw_tensor *w_scale,
                       const sw_tensor *w_sum, sw_tensor *c, float beta, sw_error *err)
{
    if (same_backend("matmul_q8", a, w, err) || same_backend("matmul_q8", a, c, err) ||
        same_backend("matmul_q8", a, w_scale, err) || same_backend("matmul_q8", a, w_sum, err))
        return err->code;
    if (need_f32("matmul_q8", a, err) || need_f32("matmul_q8", c, err) ||
        need_f32("matmul_q8", w_scale, err))
        return err->code;
    if ((w->dtype != SW_I8 && w->dtype != SW_I8_PACKED) || w_sum->dtype != SW_I32)
        return sw_fail(err, SW_ERR_ARG, "matmul_q8: the weight must be int8 and its sums int32");
    if (a->ndim != 2 || w->ndim != 2 || c->ndim != 2 || w_scale->ndim != 1 || w_sum->ndim != 1)
        return sw_fail(err, SW_ERR_ARG, "matmul_q8: operands must be matrices, scales vectors");
    int64_t m = a->shape[0], k = a->shape[1], n = w->shape[0];
    if (w->shape[1] != k || c->shape[0] != m || c->shape[1] != n || w_scale->shape[0] != n ||
        w_sum->shape[0] != n)
        return sw_fail(err, SW_ERR_ARG,
                       "matmul_q8: shapes [%lld,%lld] x [%lld,%lld]^T -> [%lld,%lld] do not fit",
                       (long long)m, (long long)k, (long long)w->shape[0], (long long)w->shape[1],
                       (long long)c->shape[0], (long long)c->shape[1]);
    if (!a->backend->matmul_q8)
        return sw_fail(err, SW_ERR_DEVICE, "matmul_q8: the %s backend has no int8 products",
                       a->backend->name);
    return a->backend->matmul_q8(a->backend, a, w, w_scale, w_sum, c, beta, err);
}

static sw_status binary_check(const char *op, const sw_tensor *a, const sw_tensor *b,
                              const sw_tensor *out, sw_error *err)
{
    if (unary_check(op, a, out, err) || same_backend(op, a, b, err) || need_f32(op, b, err))
        return err->code;
    int full = sw_tensor_same_shape(a, b);
    int row = sw_tensor_numel(b) == sw_row_len(a) && sw_row_len(b) == sw_row_len(a);
    /* b's dimensions are a's trailing ones: it repeats over a's leading ones */
    int trailing = b->ndim <= a->ndim && sw_tensor_numel(b) > 0;
    for (int i = 0; trailing && i < b->ndim; i++)
        trailing = b->shape[b->ndim - 1 - i] == a->shape[a->ndim - 1 - i];
    if (!full && !row && !trailing)
        return sw_fail(err, SW_ERR_ARG,
                       "%s: the second operand must have the first's shape or its trailing "
                       "dimensions",
                       op);
    return SW_OK;
}

sw_status sw_add(const sw_tensor *a, const sw_tensor *b, sw_tensor *out, sw_error *err)
{
    if (binary_check("add", a, b, out, err))
        return err->code;
    return a->backend->add(a->backend, a, b, out, err);
}

sw_status sw_mul(const sw_tensor *a, const sw_tensor *b, sw_tensor *out, sw_error *err)
{
    if (binary_check("mul", a, b, out, err))
        return err->code;
    return a->backend->mul(a->backend, a, b, out, err);
}

sw_status sw_scale(const sw_tensor *a, float s, sw_tensor *out, sw_error *err)
{
    if (unary_check("scale", a, out, err))
        return err->code;
    return a->backend->scale(a->backend, a, s, out, err);
}

sw_status sw_gelu(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (unary_check("gelu", a, out, err))
        return err->code;
    return a->backend->gelu(a->backend, a, out, err);
}

sw_status sw_softmax(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (unary_check("softmax", a, out, err))
        return err->code;
    return a->backend->softmax(a->backend, a, out, err);
}

sw_status sw_layernorm(const sw_tensor *a, const sw_tensor *gamma, const sw_tensor *beta, float eps,
                       sw_tensor *out, sw_error *err)
{
    if (unary_check("layernorm", a, out, err) || same_backend("layernorm", a, gamma, err) ||
        same_backend("layernorm", a, beta, err) || need_f32("layernorm", gamma, err) ||
        need_f32("layernorm", beta, err))
        return err->code;
    if (sw_tensor_numel(gamma) != sw_row_len(a) || sw_tensor_numel(beta) != sw_row_len(a))
        return sw_fail(err, SW_ERR_ARG, "layernorm: gamma and beta must have %lld values",
                       (long long)sw_row_len(a));
    if (!(eps > 0.0f))
        return sw_fail(err, SW_ERR_ARG, "layernorm: eps must be positive");
    return a->backend->layernorm(a->backend, a, gamma, beta, eps, out, err);
}

sw_status sw_convert(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (same_backend("convert", a, out, err))
        return err->code;
    int ok_in = a->dtype == SW_F32 || a->dtype == SW_F16 || a->dtype == SW_BF16;
    int ok_out = out->dtype == SW_F32 || out->dtype == SW_F16 || out->dtype == SW_BF16;
    if (!ok_in || !ok_out)
        return sw_fail(err, SW_ERR_ARG, "convert: %s to %s is not supported",
                       sw_dtype_name(a->dtype), sw_dtype_name(out->dtype));
    if (sw_tensor_numel(a) != sw_tensor_numel(out))
        return sw_fail(err, SW_ERR_ARG, "convert: element counts differ");
    return a->backend->convert(a->backend, a, out, err);
}

sw_status sw_transpose(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (same_backend("transpose", a, out, err) || need_f32("transpose", a, err) ||
        need_f32("transpose", out, err))
        return err->code;
    int ok = a->ndim >= 2 && out->ndim == a->ndim;
    for (int i = 0; ok && i < a->ndim - 2; i++)
        ok = a->shape[i] == out->shape[i];
    if (ok)
        ok = out->shape[a->ndim - 2] == a->shape[a->ndim - 1] &&
             out->shape[a->ndim - 1] == a->shape[a->ndim - 2];
    if (!ok)
        return sw_fail(err, SW_ERR_ARG,
                       "transpose: out must be a with its last two dimensions swapped");
    return a->backend->transpose(a->backend, a, out, err);
}

static sw_status conv1d_check(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias,
                              int stride, int pad, const sw_tensor *out, sw_error *err)
{
    if (same_backend("conv1d", x, w, err) || same_backend("conv1d", x, out, err) ||
        need_f32("conv1d", x, err) || need_f32_or_half("conv1d", w, 0, err) ||
        need_f32("conv1d", out, err))
        return err->code;
    if (bias && (same_backend("conv1d", x, bias, err) || need_f32("conv1d", bias, err)))
        return err->code;
    if (x->ndim != 3 || w->ndim != 3 || out->ndim != 3)
        return sw_fail(err, SW_ERR_ARG,
                       "conv1d: x [B,T,C_in], w [C_out,C_in,K] and out [B,T,C_out]");
    if (stride < 1 || pad < 0)
        return sw_fail(err, SW_ERR_ARG, "conv1d: stride must be >= 1 and pad >= 0");
    int64_t b = x->shape[0], t_in = x->shape[1], c_in = x->shape[2];
    int64_t c_out = w->shape[0], k = w->shape[2];
    int64_t span = t_in + 2 * (int64_t)pad - k;
    int64_t t_out = span < 0 ? 0 : span / stride + 1;
    if (w->shape[1] != c_in || k < 1 || out->shape[0] != b || out->shape[1] != t_out ||
        out->shape[2] != c_out)
        return sw_fail(err, SW_ERR_ARG,
                       "conv1d: x [%lld,%lld,%lld] with w [%lld,%lld,%lld] (stride %d, pad %d) "
                       "gives [%lld,%lld,%lld], not [%lld,%lld,%lld]",
                       (long long)b, (long long)t_in, (long long)c_in, (long long)c_out,
                       (long long)w->shape[1], (long long)k, stride, pad, (long long)b,
                       (long long)t_out, (long long)c_out, (long long)out->shape[0],
                       (long long)out->shape[1], (long long)out->shape[2]);
    if (bias && sw_tensor_numel(bias) != c_out)
        return sw_fail(err, SW_ERR_ARG, "conv1d: bias must have %lld values", (long long)c_out);
    return SW_OK;
}

sw_status sw_conv1d(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias, int stride,
                    int pad, sw_tensor *out, sw_error *err)
{
    if (conv1d_check(x, w, bias, stride, pad, out, err))
        return err->code;
    return x->backend->conv1d(x->backend, x, w, bias, stride, pad, out, err);
}

sw_status sw_conv1d_work(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias, int stride,
                         int pad, const sw_tensor *work, sw_tensor *out, sw_error *err)
{
    if (conv1d_check(x, w, bias, stride, pad, out, err))
        return err->code;
    sw_backend *be = x->backend;
    if (!work || !be->conv1d_work)
        return be->conv1d(be, x, w, bias, stride, pad, out, err);
    size_t need = SW_CONV1D_WORK_BYTES(out->shape[1], x->shape[2], w->shape[2]);
    if (same_backend("conv1d", x, work, err))
        return err->code;
    if (work->dtype != SW_F32 || sw_tensor_nbytes(work) < need)
        return sw_fail(err, SW_ERR_ARG, "conv1d: the work holds %zu bytes of %s, %zu of f32 needed",
                       sw_tensor_nbytes(work), sw_dtype_name(work->dtype), need);
    return be->conv1d_work(be, x, w, bias, stride, pad, work, out, err);
}

static sw_status ids_check(const char *op, const sw_tensor *ids, const sw_tensor *rows,
                           sw_error *err)
{
    if (same_backend(op, ids, rows, err))
        return err->code;
    if (ids->dtype != SW_I32)
        return sw_fail(err, SW_ERR_ARG, "%s: ids must be int32, got %s", op,
                       sw_dtype_name(ids->dtype));
    return SW_OK;
}

sw_status sw_gather_rows(const sw_tensor *table, const sw_tensor *ids, sw_tensor *out,
                         sw_error *err)
{
    if (same_backend("gather_rows", table, out, err) ||
        need_f32_or_half("gather_rows", table, SW_CAP_HALF_TABLE, err) ||
        need_f32("gather_rows", out, err) || ids_check("gather_rows", ids, table, err))
        return err->code;
    if (sw_row_len(out) != sw_row_len(table) || sw_rows(out) != sw_tensor_numel(ids))
        return sw_fail(err, SW_ERR_ARG,
                       "gather_rows: out must have one row of %lld values per id (%lld ids)",
                       (long long)sw_row_len(table), (long long)sw_tensor_numel(ids));
    return table->backend->gather_rows(table->backend, table, ids, out, err);
}

sw_status sw_scatter_rows(const sw_tensor *src, const sw_tensor *ids, sw_tensor *dst, sw_error *err)
{
    if (same_backend("scatter_rows", src, dst, err) || need_f32("scatter_rows", src, err) ||
        need_f32("scatter_rows", dst, err) || ids_check("scatter_rows", ids, src, err))
        return err->code;
    if (sw_row_len(src) != sw_row_len(dst) || sw_rows(src) != sw_tensor_numel(ids))
        return sw_fail(err, SW_ERR_ARG,
                       "scatter_rows: src must have one row of %lld values per id (%lld ids)",
                       (long long)sw_row_len(dst), (long long)sw_tensor_numel(ids));
    return src->backend->scatter_rows(src->backend, src, ids, dst, err);
}

sw_status sw_attention(const sw_tensor *q, const sw_tensor *k, const sw_tensor *v,
                       const sw_attention_params *p, sw_tensor *out, sw_tensor *probs,
                       sw_error *err)
{
    const char *op = "attention";
    if (same_backend(op, q, k, err) || same_backend(op, q, v, err) ||
        same_backend(op, q, out, err) || need_f32(op, q, err) || need_f32(op, k, err) ||
        need_f32(op, v, err) || need_f32(op, out, err))
        return err->code;
    if (probs && (same_backend(op, q, probs, err) || need_f32(op, probs, err)))
        return err->code;
    if (q->ndim != 3 || (k->ndim != 3 && k->ndim != 4) || !sw_tensor_same_shape(q, out) ||
        !sw_tensor_same_shape(k, v))
        return sw_fail(err, SW_ERR_ARG,
                       "attention: q and out [B,T_q,D], k and v [B_kv,T_kv,D] or "
                       "[B_kv,H,T_kv,D/H] of one shape each");
    int64_t b = q->shape[0], tq = q->shape[1], d = q->shape[2];
    int head_major = k->ndim == 4;
    int64_t bkv = k->shape[0], tkv = head_major ? k->shape[2] : k->shape[1];
    if (p->n_heads < 1 || d % p->n_heads != 0)
        return sw_fail(err, SW_ERR_ARG, "attention: %d heads do not divide the width %lld",
                       p->n_heads, (long long)d);
    if (head_major && (k->shape[1] != p->n_heads || k->shape[3] * p->n_heads != d))
        return sw_fail(err, SW_ERR_ARG,
                       "attention: head-major k is [%lld,%lld,%lld,%lld], not "
                       "%d heads of %lld",
                       (long long)k->shape[0], (long long)k->shape[1], (long long)k->shape[2],
                       (long long)k->shape[3], p->n_heads, (long long)(d / p->n_heads));
    if (!head_major && k->shape[2] != d)
        return sw_fail(err, SW_ERR_ARG, "attention: k is %lld wide, q %lld", (long long)k->shape[2],
                       (long long)d);
    if (bkv < 1 || b % bkv != 0)
        return sw_fail(err, SW_ERR_ARG,
                       "attention: the query batch %lld is not a multiple of the key batch %lld",
                       (long long)b, (long long)bkv);
    if (p->kv_len < 1 || p->kv_len > tkv)
        return sw_fail(err, SW_ERR_ARG, "attention: kv_len %lld outside 1..%lld",
                       (long long)p->kv_len, (long long)tkv);
    if (p->length && (probs || !q->backend->supports ||
                      !q->backend->supports(q->backend, SW_CAP_DEVICE_LENGTH, 0, 0)))
        return sw_fail(err, SW_ERR_ARG,
                       probs ? "attention: a device length cannot have probs"
                             : "attention: this backend does not read a length from device memory");
    if (probs && (probs->ndim != 4 || probs->shape[0] != b || probs->shape[1] != p->n_heads ||
                  probs->shape[2] != tq || probs->shape[3] != p->kv_len))
        return sw_fail(err, SW_ERR_ARG, "attention: probs must be [%lld,%d,%lld,%lld]",
                       (long long)b, p->n_heads, (long long)tq, (long long)p->kv_len);
    return q->backend->attention(q->backend, q, k, v, p, out, probs, err);
}

/* ---- ABI 3: SincNet and LSTM ops ---- */

sw_status sw_leaky_relu(const sw_tensor *a, float alpha, sw_tensor *out, sw_error *err)
{
    if (unary_check("leaky_relu", a, out, err))
        return err->code;
    return a->backend->leaky_relu(a->backend, a, alpha, out, err);
}

sw_status sw_abs(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (unary_check("abs", a, out, err))
        return err->code;
    return a->backend->absolute(a->backend, a, out, err);
}

sw_status sw_log_softmax(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    if (unary_check("log_softmax", a, out, err))
        return err->code;
    return a->backend->log_softmax(a->backend, a, out, err);
}

sw_status sw_max_pool1d(const sw_tensor *x, int kernel, int stride, sw_tensor *out, sw_error *err)
{
    if (same_backend("max_pool1d", x, out, err) || need_f32("max_pool1d", x, err) ||
        need_f32("max_pool1d", out, err))
        return err->code;
    if (kernel < 1 || stride < 1)
        return sw_fail(err, SW_ERR_ARG, "max_pool1d: kernel and stride must be >= 1");
    if (x->ndim != 3 || out->ndim != 3)
        return sw_fail(err, SW_ERR_ARG, "max_pool1d: x and out must be [B,T,C]");
    int64_t t_out = sw_window_frames(x->shape[1], kernel, stride);
    if (out->shape[0] != x->shape[0] || out->shape[1] != t_out || out->shape[2] != x->shape[2])
        return sw_fail(err, SW_ERR_ARG, "max_pool1d: out must be [%lld,%lld,%lld]",
                       (long long)x->shape[0], (long long)t_out, (long long)x->shape[2]);
    return x->backend->max_pool1d(x->backend, x, kernel, stride, out, err);
}

sw_status sw_instance_norm(const sw_tensor *x, const sw_tensor *gamma, const sw_tensor *beta,
                           float eps, sw_tensor *out, sw_error *err)
{
    const char *op = "instance_norm";
    if (unary_check(op, x, out, err))
        return err->code;
    if (x->ndim != 3)
        return sw_fail(err, SW_ERR_ARG, "instance_norm: x must be [B,T,C]");
    if (!gamma != !beta)
        return sw_fail(err, SW_ERR_ARG, "instance_norm: give both gamma and beta, or neither");
    if (gamma && (same_backend(op, x, gamma, err) || same_backend(op, x, beta, err) ||
                  need_f32(op, gamma, err) || need_f32(op, beta, err)))
        return err->code;
    if (gamma && (sw_tensor_numel(gamma) != x->shape[2] || sw_tensor_numel(beta) != x->shape[2]))
        return sw_fail(err, SW_ERR_ARG, "instance_norm: gamma and beta must have %lld values",
                       (long long)x->shape[2]);
    if (!(eps > 0.0f))
        return sw_fail(err, SW_ERR_ARG, "instance_norm: eps must be positive");
    return x->backend->instance_norm(x->backend, x, gamma, beta, eps, out, err);
}

sw_status sw_lstm(const sw_tensor *x, const sw_tensor *w_ih, const sw_tensor *w_hh,
                  const sw_tensor *bias, sw_tensor *out, sw_error *err)
{
    return sw_lstm_carry(x, w_ih, w_hh, bias, NULL, out, err);
}

sw_status sw_lstm_carry(const sw_tensor *x, const sw_tensor *w_ih, const sw_tensor *w_hh,
                        const sw_tensor *bias, sw_tensor *state, sw_tensor *out, sw_error *err)
{
    const char *op = "lstm";
    const sw_tensor *all[] = {w_ih, w_hh, bias, out};
    if (need_f32(op, x, err))
        return err->code;
    for (int i = 0; i < 4; i++)
        if (same_backend(op, x, all[i], err) || need_f32(op, all[i], err))
            return err->code;
    if (x->ndim != 3 || w_ih->ndim != 3 || w_hh->ndim != 3 || bias->ndim != 2 || out->ndim != 3)
        return sw_fail(err, SW_ERR_ARG,
                       "lstm: x [B,T,in], w_ih [D,4H,in], w_hh [D,4H,H], bias [D,4H], out "
                       "[B,T,D*H]");
    int64_t d = w_ih->shape[0], h = w_hh->shape[2];
    int ok = (d == 1 || d == 2) && h >= 1 && w_ih->shape[1] == 4 * h &&
             w_ih->shape[2] == x->shape[2] && w_hh->shape[0] == d && w_hh->shape[1] == 4 * h &&
             bias->shape[0] == d && bias->shape[1] == 4 * h && out->shape[0] == x->shape[0] &&
             out->shape[1] == x->shape[1] && out->shape[2] == d * h;
    if (!ok)
        return sw_fail(
            err, SW_ERR_ARG,
            "lstm: shapes do not fit: x [%lld,%lld,%lld], w_ih [%lld,%lld,%lld], w_hh "
            "[%lld,%lld,%lld], bias [%lld,%lld], out [%lld,%lld,%lld]",
            (long long)x->shape[0], (long long)x->shape[1], (long long)x->shape[2],
            (long long)w_ih->shape[0], (long long)w_ih->shape[1], (long long)w_ih->shape[2],
            (long long)w_hh->shape[0], (long long)w_hh->shape[1], (long long)w_hh->shape[2],
            (long long)bias->shape[0], (long long)bias->shape[1], (long long)out->shape[0],
            (long long)out->shape[1], (long long)out->shape[2]);
    if (x->data == out->data)
        return sw_fail(err, SW_ERR_ARG, "lstm: out must not be x");
    if (state) {
        if (same_backend(op, x, state, err) || need_f32(op, state, err))
            return err->code;
        if (state->ndim != 4 || state->shape[0] != 2 || state->shape[1] != d ||
            state->shape[2] != x->shape[0] || state->shape[3] != h)
            return sw_fail(err, SW_ERR_ARG, "lstm: state must be [2, %lld, %lld, %lld]",
                           (long long)d, (long long)x->shape[0], (long long)h);
        if (state->data == out->data || state->data == x->data)
            return sw_fail(err, SW_ERR_ARG, "lstm: state must not be x or out");
    }
    return x->backend->lstm(x->backend, x, w_ih, w_hh, bias, state, out, err);
}

/* ---- ABI 5: statistics pooling, magnitudes, L2 normalisation ---- */

sw_status sw_stats_pool(const sw_tensor *x, const sw_tensor *w, double eps, sw_tensor *out,
                        sw_error *err)
{
    const char *op = "stats_pool";
    if (same_backend(op, x, out, err) || need_f32(op, x, err) || need_f32(op, out, err))
        return err->code;
    if (w && (same_backend(op, x, w, err) || need_f32(op, w, err)))
        return err->code;
    if (x->ndim != 3 && x->ndim != 4)
        return sw_fail(err, SW_ERR_ARG, "stats_pool: x must be [B,T,C] or [B,G,T,C]");
    int64_t b = x->shape[0], g = x->ndim == 4 ? x->shape[1] : 1;
    int64_t t = x->shape[x->ndim - 2], c = x->shape[x->ndim - 1];
    int64_t m = w ? w->shape[1] : 1;
    if (w && (w->ndim != 3 || w->shape[0] != b || w->shape[2] != t))
        return sw_fail(err, SW_ERR_ARG, "stats_pool: w must be [%lld,M,%lld]", (long long)b,
                       (long long)t);
    if (out->ndim != 2 || out->shape[0] != b * m || out->shape[1] != 2 * c * g)
        return sw_fail(err, SW_ERR_ARG, "stats_pool: out must be [%lld,%lld]", (long long)(b * m),
                       (long long)(2 * c * g));
    if (!(eps >= 0.0))
        return sw_fail(err, SW_ERR_ARG, "stats_pool: eps must not be negative");
    if (out->data == x->data || (w && out->data == w->data))
        return sw_fail(err, SW_ERR_ARG, "stats_pool: out must not be an input");
    return x->backend->stats_pool(x->backend, x, w, eps, out, err);
}

sw_status sw_magnitude(const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    const char *op = "magnitude";
    if (same_backend(op, a, out, err) || need_f32(op, a, err) || need_f32(op, out, err))
        return err->code;
    int64_t len = sw_row_len(a);
    if (a->ndim < 1 || len % 2 || out->ndim != a->ndim || sw_row_len(out) != len / 2 ||
        sw_rows(out) != sw_rows(a))
        return sw_fail(err, SW_ERR_ARG,
                       "magnitude: a must be [..., 2K] (re then im) and out [..., K] over the "
                       "same rows");
    for (int i = 0; i + 1 < a->ndim; i++)
        if (a->shape[i] != out->shape[i])
            return sw_fail(err, SW_ERR_ARG, "magnitude: a and out differ in dimension %d", i);
    if (out->data == a->data)
        return sw_fail(err, SW_ERR_ARG, "magnitude: out must not be a");
    return a->backend->magnitude(a->backend, a, out, err);
}

sw_status sw_l2_normalize(const sw_tensor *a, float eps, sw_tensor *out, sw_error *err)
{
    if (unary_check("l2_normalize", a, out, err))
        return err->code;
    if (!(eps > 0.0f))
        return sw_fail(err, SW_ERR_ARG, "l2_normalize: eps must be positive");
    return a->backend->l2_normalize(a->backend, a, eps, out, err);
}
