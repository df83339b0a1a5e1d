#include "ops.h"

int64_t sw_row_len(const sw_tensor *t)
{
    return t->ndim == 0 ? 1 : t->shape[t->ndim - 1];
}

int64_t sw_rows(const sw_tensor *t)
{
    int64_t len = sw_row_len(t);
    return len == 0 ? 0 : sw_tensor_numel(t) / len;
}

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
    if (need_f32("matmul", a, err) || need_f32("matmul", b, err) || need_f32("matmul", c, err))
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

static sw_status binary_check(const char *op, const sw_tensor *a, const sw_tensor *b,
                              const sw_tensor *out, sw_error *err)
{
    if (unary_check(op, a, out, err) || same_backend(op, a, b, err) || need_f32(op, b, err))
        return err->code;
    int full = sw_tensor_same_shape(a, b);
    int row = sw_tensor_numel(b) == sw_row_len(a) && sw_row_len(b) == sw_row_len(a);
    if (!full && !row)
        return sw_fail(err, SW_ERR_ARG,
                       "%s: the second operand must have the first's shape or be one row", op);
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
