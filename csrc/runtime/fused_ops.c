/* The fused entries for model code (fused_ops.h): each checks that the
 * backend has the entry and hands the call over; the backend checks shapes,
 * as its kernels always did. */
#include "fused_ops.h"

#include <stdlib.h>

#include "q8_quantize.h"

int sw_supports(sw_backend *be, sw_capability cap, int64_t a, int64_t b)
{
    return be && be->supports && be->supports(be, cap, a, b);
}

static sw_status missing(const sw_backend *be, const char *entry, sw_error *err)
{
    return sw_fail(err, SW_ERR_ARG, "%s: the %s backend has no such op (ask sw_supports first)",
                   entry, be ? be->name : "(no)");
}

sw_status sw_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout, sw_error *err)
{
    *layout = SW_LAYOUT_OUT_IN;
    if (err->code != SW_OK || !be->prepare_linear)
        return err->code;
    return be->prepare_linear(be, w, layout, err);
}

/* The host path: every row quantized here, then one upload of each part. */
static sw_status quantize_and_upload(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows,
                                     int64_t cols, sw_tensor *w, sw_tensor *scale, sw_tensor *sum,
                                     sw_error *err)
{
    int8_t *q = malloc((size_t)(rows * cols));
    float *s = malloc((size_t)rows * sizeof *s);
    int32_t *sums = malloc((size_t)rows * sizeof *sums);
    float *row = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *row);
    if (!q || !s || !sums || !row) {
        sw_fail(err, SW_ERR_NOMEM, "out of host memory quantizing a %lld x %lld weight",
                (long long)rows, (long long)cols);
    } else {
        if (rows > 0)
            sw_q8_quantize_matrix_rows(src, dtype, cols, 0, (size_t)rows, row, q, s, sums);
        if (be->upload(be, w->data, q, (size_t)(rows * cols), err) == SW_OK &&
            be->upload(be, scale->data, s, (size_t)rows * sizeof *s, err) == SW_OK &&
            be->upload(be, sum->data, sums, (size_t)rows * sizeof *sums, err) == SW_OK)
            be->synchronize(be, err); /* host buffers go as soon as the copies are done */
    }
    free(q);
    free(s);
    free(sums);
    free(row);
    return err->code;
}

sw_status sw_prepare_q8(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows, int64_t cols,
                        sw_tensor *w, sw_tensor *scale, sw_tensor *sum, sw_error *err)
{
    if (err->code != SW_OK)
        return err->code;
    if (be->prepare_q8)
        return be->prepare_q8(be, src, dtype, rows, cols, w, scale, sum, err);
    int64_t shape[2] = {rows, cols};
    if (sw_tensor_new(be, SW_I8, 2, shape, w, err) != SW_OK ||
        sw_tensor_new(be, SW_F32, 1, &rows, scale, err) != SW_OK ||
        sw_tensor_new(be, SW_I32, 1, &rows, sum, err) != SW_OK)
        return err->code;
    return quantize_and_upload(be, src, dtype, rows, cols, w, scale, sum, err);
}

sw_status sw_gather_linear(const sw_tensor *x, const sw_tensor *ids, int taps, const sw_tensor *w,
                           sw_weight_layout layout, const sw_tensor *bias, int relu, int64_t block,
                           sw_tensor *y, sw_error *err)
{
    sw_backend *be = x->backend;
    if (!be || !be->gather_linear)
        return missing(be, "gather_linear", err);
    return be->gather_linear(be, x, ids, taps, w, layout, bias, relu, block, y, err);
}

sw_status sw_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                             int stride, sw_tensor *u, sw_error *err)
{
    if (!be || !be->prepare_conv3x3)
        return missing(be, "prepare_conv3x3", err);
    return be->prepare_conv3x3(be, w, layout, stride, u, err);
}

sw_status sw_conv3x3(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                     const sw_tensor *u, int stride, const sw_tensor *bias, const sw_tensor *add,
                     int relu, sw_tensor *y, sw_error *err)
{
    sw_backend *be = x->backend;
    if (!be || !be->conv3x3)
        return missing(be, "conv3x3", err);
    return be->conv3x3(be, x, h, batch, off, u, stride, bias, add, relu, y, err);
}

sw_status sw_conv3x3_single(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                            const sw_tensor *w, const sw_tensor *bias, int relu, sw_tensor *y,
                            sw_error *err)
{
    sw_backend *be = x->backend;
    if (!be || !be->conv3x3_single)
        return missing(be, "conv3x3_single", err);
    return be->conv3x3_single(be, x, h, batch, off, w, bias, relu, y, err);
}

sw_status sw_affine_relu_rows(const sw_tensor *src, int64_t ld, int64_t n, int64_t c,
                              const sw_tensor *scale, const sw_tensor *shift, sw_tensor *dst,
                              sw_error *err)
{
    sw_backend *be = src->backend;
    if (!be || !be->affine_relu_rows)
        return missing(be, "affine_relu_rows", err);
    return be->affine_relu_rows(be, src, ld, n, c, scale, shift, dst, err);
}

sw_status sw_span_abs_pool(const sw_tensor *span, const int64_t *first, const float *scale,
                           const float *shift, int pool, sw_tensor *y, sw_error *err)
{
    sw_backend *be = span->backend;
    if (!be || !be->span_abs_pool)
        return missing(be, "span_abs_pool", err);
    return be->span_abs_pool(be, span, first, scale, shift, pool, y, err);
}

sw_status sw_search_step(sw_backend *be, const sw_tensor *logits, const sw_tensor *mask,
                         const sw_tensor *rows_plan, sw_tensor *work, const sw_search_params *p,
                         sw_error *err)
{
    if (!be || !be->search_step)
        return missing(be, "search_step", err);
    if (logits->ndim != 2 || logits->dtype != SW_F32 || mask->ndim != 1 || mask->dtype != SW_I8 ||
        mask->shape[0] != logits->shape[1] || p->k < 1 || p->k > SW_SEARCH_MAX_K ||
        p->k > logits->shape[1])
        return sw_fail(err, SW_ERR_ARG,
                       "search_step: logits [rows, n] f32, mask [n] int8 and 1 <= k <= %d needed",
                       SW_SEARCH_MAX_K);
    if (p->temperature != 0.0f &&
        (!(p->temperature > 0.0f) || p->k != 1 || !sw_supports(be, SW_CAP_SEARCH_SAMPLE, 0, 0)))
        return sw_fail(err, SW_ERR_ARG,
                       "search_step: a draw (temperature %g) needs k 1 and a backend that draws",
                       (double)p->temperature);
    if (rows_plan->dtype != SW_I32 ||
        sw_tensor_numel(rows_plan) < logits->shape[0] * SW_SEARCH_ROW_WORDS)
        return sw_fail(err, SW_ERR_ARG, "search_step: rows of %lld int32 words needed",
                       (long long)(logits->shape[0] * SW_SEARCH_ROW_WORDS));
    if (work->dtype != SW_F32 ||
        sw_tensor_numel(work) < SW_SEARCH_WORK(logits->shape[0], logits->shape[1], p->k))
        return sw_fail(err, SW_ERR_ARG, "search_step: work of %lld f32 entries needed",
                       (long long)SW_SEARCH_WORK(logits->shape[0], logits->shape[1], p->k));
    return be->search_step(be, logits, mask, rows_plan, work, p, err);
}

sw_status sw_fbank_on_device(const sw_tensor *samples, const sw_fbank_params *p,
                             const sw_tensor *banks, sw_tensor *out, sw_error *err)
{
    sw_backend *be = samples->backend;
    if (!be || !be->fbank)
        return missing(be, "fbank", err);
    return be->fbank(be, samples, p, banks, out, err);
}

sw_status sw_gather_centered(const sw_tensor *table, const sw_tensor *ids, int batch,
                             const int64_t *off, sw_tensor *out, sw_error *err)
{
    sw_backend *be = table->backend;
    if (!be || !be->gather_centered)
        return missing(be, "gather_centered", err);
    return be->gather_centered(be, table, ids, batch, off, out, err);
}

sw_status sw_mel_power_on_device(const sw_tensor *samples, int n_fft, int hop,
                                 const sw_tensor *banks, sw_tensor *out, sw_error *err)
{
    sw_backend *be = samples->backend;
    if (!be || !be->mel_power)
        return missing(be, "mel_power", err);
    return be->mel_power(be, samples, n_fft, hop, banks, out, err);
}

sw_status sw_gather_scaled(const sw_tensor *table, const sw_tensor *ids, const sw_tensor *scales,
                           sw_tensor *out, sw_error *err)
{
    sw_backend *be = table->backend;
    if (!be || !be->gather_scaled)
        return missing(be, "gather_scaled", err);
    return be->gather_scaled(be, table, ids, scales, out, err);
}
