/* The named-tensor loader every model shares (named_tensors.h). */
#include "named_tensors.h"

#include <stdio.h>
#include <string.h>

#include "fused_ops.h"
#include "ops.h"
#include "widen.h"

sw_weight_source sw_weight_source_make(sw_backend *be, const sw_named_tensor *tensors, int n,
                                       const char *what, sw_error *err)
{
    sw_weight_source s = {be, tensors, n, what, err};
    return s;
}

static void shape_text(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

const sw_named_tensor *sw_weights_find(sw_weight_source *src, const char *name, sw_shape want)
{
    if (src->err->code != SW_OK)
        return NULL;
    char want_text[96], got_text[96];
    shape_text(want_text, sizeof want_text, want.ndim, want.d);
    const sw_named_tensor *t = NULL;
    for (int i = 0; i < src->n && !t; i++)
        if (src->tensors[i].name && strcmp(src->tensors[i].name, name) == 0)
            t = &src->tensors[i];
    if (!t) {
        sw_fail(src->err, SW_ERR_MODEL, "%s: missing tensor '%s' of shape %s", src->what, name,
                want_text);
        return NULL;
    }
    int same = t->ndim == want.ndim;
    for (int i = 0; same && i < want.ndim; i++)
        same = t->shape[i] == want.d[i];
    if (!same) {
        shape_text(got_text, sizeof got_text, t->ndim, t->shape);
        sw_fail(src->err, SW_ERR_MODEL, "%s: tensor '%s' has shape %s, expected %s", src->what,
                name, got_text, want_text);
        return NULL;
    }
    if (t->dtype != SW_F32 && t->dtype != SW_F16 && t->dtype != SW_BF16) {
        sw_fail(src->err, SW_ERR_MODEL,
                "%s: tensor '%s' is %s; float32, float16 or bfloat16 expected", src->what, name,
                sw_dtype_name(t->dtype));
        return NULL;
    }
    if (!t->data) {
        sw_fail(src->err, SW_ERR_MODEL, "%s: tensor '%s' has no data", src->what, name);
        return NULL;
    }
    return t;
}

const float *sw_weights_host_f32(sw_weight_source *src, const char *name, sw_shape want)
{
    const sw_named_tensor *t = sw_weights_find(src, name, want);
    if (t && t->dtype != SW_F32) {
        sw_fail(src->err, SW_ERR_MODEL, "%s: tensor '%s' is %s; float32 expected", src->what, name,
                sw_dtype_name(t->dtype));
        return NULL;
    }
    return t ? t->data : NULL;
}

sw_status sw_weights_upload(sw_weight_source *src, const float *host, sw_shape shape,
                            sw_tensor *dst)
{
    if (src->err->code != SW_OK)
        return src->err->code;
    if (sw_tensor_new(src->be, SW_F32, shape.ndim, shape.d, dst, src->err) == SW_OK)
        src->be->upload(src->be, dst->data, host, sw_tensor_nbytes(dst), src->err);
    return src->err->code;
}

sw_status sw_weights_upload_named(sw_weight_source *src, const sw_named_tensor *t, sw_tensor *dst,
                                  sw_dtype dtype)
{
    if (src->err->code != SW_OK)
        return src->err->code;
    sw_backend *be = src->be;
    if (sw_tensor_new(be, dtype, t->ndim, t->shape, dst, src->err) != SW_OK)
        return src->err->code;
    if (t->dtype == dtype)
        return be->upload(be, dst->data, t->data, sw_tensor_nbytes(dst), src->err);
    if (dtype == SW_F32 && sw_supports(be, SW_CAP_HOST_MEMORY, 0, 0)) {
        /* host memory: halves widened straight into the buffer (no staging
         * copy; widen.h reads them at any address) */
        sw_widen_to_f32(t->data, t->dtype, dst->data, (size_t)sw_tensor_numel(dst));
        return SW_OK;
    }
    sw_tensor narrow = {0};
    if (sw_tensor_new(be, t->dtype, t->ndim, t->shape, &narrow, src->err) == SW_OK &&
        be->upload(be, narrow.data, t->data, sw_tensor_nbytes(&narrow), src->err) == SW_OK)
        sw_convert(&narrow, dst, src->err);
    sw_tensor_free(&narrow);
    return src->err->code;
}

sw_status sw_weights_load(sw_weight_source *src, sw_tensor *dst, const char *name, sw_shape want)
{
    const sw_named_tensor *t = sw_weights_find(src, name, want);
    return t ? sw_weights_upload_named(src, t, dst, SW_F32) : src->err->code;
}

void sw_weight_free(sw_tensor *t, int backend_lost)
{
    if (backend_lost)
        memset(t, 0, sizeof *t); /* the pool that owned it is gone */
    else
        sw_tensor_free(t);
}
