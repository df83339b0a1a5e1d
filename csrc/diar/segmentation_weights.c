/* Building the segmentation model from named host arrays: each tensor is
 * looked up by name, its shape checked against the architecture, and copied
 * to the backend as float32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segmentation_internal.h"

typedef struct loader {
    sw_backend *be;
    const sw_named_tensor *tensors;
    int n;
    sw_error *err;
} loader;

static void shape_text(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < ndim && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
}

static sw_status upload(loader *ld, const sw_named_tensor *src, sw_tensor *dst)
{
    sw_backend *be = ld->be;
    if (sw_tensor_new(be, SW_F32, src->ndim, src->shape, dst, ld->err) != SW_OK)
        return ld->err->code;
    if (src->dtype == SW_F32)
        return be->upload(be, dst->data, src->data, sw_tensor_nbytes(dst), ld->err);
    sw_tensor narrow;
    if (sw_tensor_new(be, src->dtype, src->ndim, src->shape, &narrow, ld->err) != SW_OK)
        return ld->err->code;
    if (be->upload(be, narrow.data, src->data, sw_tensor_nbytes(&narrow), ld->err) == SW_OK)
        sw_convert(&narrow, dst, ld->err);
    sw_tensor_free(&narrow);
    return ld->err->code;
}

/* Finds `name` and uploads it; ndim and d0..d2 give the shape expected. */
static sw_status load(loader *ld, sw_tensor *dst, const char *name, int ndim, int64_t d0,
                      int64_t d1, int64_t d2)
{
    if (ld->err->code != SW_OK)
        return ld->err->code;
    int64_t want[3] = {d0, d1, d2};
    char want_text[64], got_text[64];
    shape_text(want_text, sizeof want_text, ndim, want);
    const sw_named_tensor *src = NULL;
    for (int i = 0; i < ld->n && !src; i++)
        if (ld->tensors[i].name && strcmp(ld->tensors[i].name, name) == 0)
            src = &ld->tensors[i];
    if (!src)
        return sw_fail(ld->err, SW_ERR_MODEL,
                       "segmentation weights: missing tensor '%s' of shape %s", name, want_text);
    int same = src->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = src->shape[i] == want[i];
    if (!same) {
        shape_text(got_text, sizeof got_text, src->ndim, src->shape);
        return sw_fail(ld->err, SW_ERR_MODEL,
                       "segmentation weights: tensor '%s' has shape %s, expected %s", name,
                       got_text, want_text);
    }
    if (src->dtype != SW_F32 && src->dtype != SW_F16 && src->dtype != SW_BF16)
        return sw_fail(ld->err, SW_ERR_MODEL,
                       "segmentation weights: tensor '%s' is %s; float32, float16 or bfloat16 "
                       "expected",
                       name, sw_dtype_name(src->dtype));
    if (!src->data)
        return sw_fail(ld->err, SW_ERR_MODEL, "segmentation weights: tensor '%s' has no data",
                       name);
    return upload(ld, src, dst);
}

static void free_tensor(const sw_segmentation *m, sw_tensor *t)
{
    if (m->backend_lost)
        memset(t, 0, sizeof *t); /* the pool that owned it is gone */
    else
        sw_tensor_free(t);
}

void sw_segmentation_destroy(sw_segmentation *m)
{
    if (!m)
        return;
    sw_tensor *all[] = {&m->wav_norm_w, &m->wav_norm_b, &m->cls_w, &m->cls_b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free_tensor(m, all[i]);
    for (int i = 0; i < 3; i++) {
        free_tensor(m, &m->conv_w[i]);
        free_tensor(m, &m->conv_b[i]);
        free_tensor(m, &m->norm_w[i]);
        free_tensor(m, &m->norm_b[i]);
    }
    for (int i = 0; i < SEG_LSTM_LAYERS; i++) {
        free_tensor(m, &m->lstm_ih[i]);
        free_tensor(m, &m->lstm_hh[i]);
        free_tensor(m, &m->lstm_b[i]);
    }
    for (int i = 0; i < 2; i++) {
        free_tensor(m, &m->lin_w[i]);
        free_tensor(m, &m->lin_b[i]);
    }
    free(m);
}

void sw_segmentation_backend_lost(sw_segmentation *m)
{
    if (m)
        m->backend_lost = 1;
}

sw_backend *sw_segmentation_backend(const sw_segmentation *m)
{
    return m->be;
}

sw_status sw_segmentation_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                                 sw_segmentation **out, sw_error *err)
{
    *out = NULL;
    if (!be || (!tensors && n_tensors > 0) || n_tensors < 0)
        return sw_fail(err, SW_ERR_ARG, "sw_segmentation_create: backend and tensors needed");
    sw_segmentation *m = calloc(1, sizeof *m);
    if (!m)
        return sw_fail(err, SW_ERR_NOMEM, "segmentation: out of host memory");
    m->be = be;
    loader ld = {be, tensors, n_tensors, err};
    const int64_t h = SEG_LSTM_HIDDEN, ch = SEG_CONV_CHANNELS;
    load(&ld, &m->wav_norm_w, "sincnet.wav_norm1d.weight", 1, 1, 0, 0);
    load(&ld, &m->wav_norm_b, "sincnet.wav_norm1d.bias", 1, 1, 0, 0);
    load(&ld, &m->conv_w[0], "sincnet.conv1d.0.weight", 3, SEG_SINC_FILTERS, 1, SEG_SINC_TAPS);
    char name[64];
    for (int i = 0; i < 3; i++) {
        int64_t c = i == 0 ? SEG_SINC_FILTERS : ch;
        if (i > 0) {
            snprintf(name, sizeof name, "sincnet.conv1d.%d.weight", i);
            load(&ld, &m->conv_w[i], name, 3, ch, i == 1 ? SEG_SINC_FILTERS : ch, SEG_CONV_TAPS);
            snprintf(name, sizeof name, "sincnet.conv1d.%d.bias", i);
            load(&ld, &m->conv_b[i], name, 1, ch, 0, 0);
        }
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        load(&ld, &m->norm_w[i], name, 1, c, 0, 0);
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        load(&ld, &m->norm_b[i], name, 1, c, 0, 0);
    }
    for (int i = 0; i < SEG_LSTM_LAYERS; i++) {
        int64_t in = i == 0 ? ch : 2 * h;
        snprintf(name, sizeof name, "lstm.%d.weight_ih", i);
        load(&ld, &m->lstm_ih[i], name, 3, 2, 4 * h, in);
        snprintf(name, sizeof name, "lstm.%d.weight_hh", i);
        load(&ld, &m->lstm_hh[i], name, 3, 2, 4 * h, h);
        snprintf(name, sizeof name, "lstm.%d.bias", i);
        load(&ld, &m->lstm_b[i], name, 2, 2, 4 * h, 0);
    }
    load(&ld, &m->lin_w[0], "linear.0.weight", 2, SEG_LINEAR, 2 * h, 0);
    load(&ld, &m->lin_b[0], "linear.0.bias", 1, SEG_LINEAR, 0, 0);
    load(&ld, &m->lin_w[1], "linear.1.weight", 2, SEG_LINEAR, SEG_LINEAR, 0);
    load(&ld, &m->lin_b[1], "linear.1.bias", 1, SEG_LINEAR, 0, 0);
    load(&ld, &m->cls_w, "classifier.weight", 2, SW_SEG_CLASSES, SEG_LINEAR, 0);
    load(&ld, &m->cls_b, "classifier.bias", 1, SW_SEG_CLASSES, 0, 0);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_segmentation_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}
