#include "tensor.h"

#include <string.h>

#include "backend.h"

size_t sw_dtype_size(sw_dtype dtype)
{
    switch (dtype) {
    case SW_F32: return 4;
    case SW_F16: return 2;
    case SW_BF16: return 2;
    case SW_I8: return 1;
    case SW_I8_PACKED: return 1;
    case SW_I32: return 4;
    }
    return 0;
}

const char *sw_dtype_name(sw_dtype dtype)
{
    switch (dtype) {
    case SW_F32: return "float32";
    case SW_F16: return "float16";
    case SW_BF16: return "bfloat16";
    case SW_I8: return "int8";
    case SW_I8_PACKED: return "int8 (packed)";
    case SW_I32: return "int32";
    }
    return "unknown";
}

sw_tensor sw_tensor_slice(const sw_tensor *t, int64_t offset, int ndim, int64_t d0, int64_t d1,
                          int64_t d2)
{
    sw_tensor v = *t;
    v.data = (char *)t->data + offset * (int64_t)sw_dtype_size(t->dtype);
    v.ndim = ndim;
    v.shape[0] = d0;
    v.shape[1] = d1;
    v.shape[2] = d2;
    v.shape[3] = 0;
    return v;
}

int64_t sw_tensor_numel(const sw_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

size_t sw_tensor_nbytes(const sw_tensor *t)
{
    return (size_t)sw_tensor_numel(t) * sw_dtype_size(t->dtype);
}

static sw_status check_shape(sw_dtype dtype, int ndim, const int64_t *shape, sw_error *err)
{
    if (sw_dtype_size(dtype) == 0)
        return sw_fail(err, SW_ERR_ARG, "unknown dtype %d", (int)dtype);
    if (ndim < 0 || ndim > SW_MAX_DIMS)
        return sw_fail(err, SW_ERR_ARG, "a tensor has 0 to %d dimensions, not %d", SW_MAX_DIMS,
                       ndim);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return sw_fail(err, SW_ERR_ARG, "negative dimension %lld", (long long)shape[i]);
        if (shape[i] > 0 && n > (INT64_MAX / 8) / shape[i])
            return sw_fail(err, SW_ERR_ARG, "tensor too large");
        n *= shape[i];
    }
    return SW_OK;
}

sw_tensor sw_tensor_view(sw_dtype dtype, int ndim, const int64_t *shape, void *data)
{
    sw_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.ndim = ndim < 0 ? 0 : (ndim > SW_MAX_DIMS ? SW_MAX_DIMS : ndim);
    for (int i = 0; i < t.ndim; i++)
        t.shape[i] = shape[i];
    t.data = data;
    return t;
}

sw_status sw_tensor_new(sw_backend *backend, sw_dtype dtype, int ndim, const int64_t *shape,
                        sw_tensor *out, sw_error *err)
{
    memset(out, 0, sizeof *out);
    if (!backend)
        return sw_fail(err, SW_ERR_ARG, "no backend given for a new tensor");
    if (check_shape(dtype, ndim, shape, err) != SW_OK)
        return err->code;
    *out = sw_tensor_view(dtype, ndim, shape, NULL);
    out->data = backend->alloc(backend, sw_tensor_nbytes(out), err);
    if (!out->data)
        return err->code ? err->code : sw_fail(err, SW_ERR_NOMEM, "tensor allocation failed");
    out->backend = backend;
    return SW_OK;
}

void sw_tensor_free(sw_tensor *t)
{
    if (t && t->backend && t->data)
        t->backend->free(t->backend, t->data);
    if (t) {
        t->data = NULL;
        t->backend = NULL;
    }
}

int sw_tensor_same_shape(const sw_tensor *a, const sw_tensor *b)
{
    if (a->ndim != b->ndim || a->dtype != b->dtype)
        return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

int64_t sw_row_len(const sw_tensor *t)
{
    return t->ndim == 0 ? 1 : t->shape[t->ndim - 1];
}

int64_t sw_rows(const sw_tensor *t)
{
    int64_t len = sw_row_len(t);
    return len == 0 ? 0 : sw_tensor_numel(t) / len;
}

int64_t sw_window_frames(int64_t t_in, int64_t kernel, int64_t stride)
{
    return t_in < kernel || stride < 1 ? 0 : (t_in - kernel) / stride + 1;
}
