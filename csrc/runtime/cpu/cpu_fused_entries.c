/* The CPU backend's answers to `supports`, its weight layouts and its fused
 * kernels, each a thin adapter to the kernel's own file. */
#include "cpu_fused_entries.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu_workers.h"
#include "cpu_affine_relu.h"
#include "cpu_conv_single.h"
#include "cpu_gather_linear.h"
#include "cpu_span_pool.h"
#include "cpu_winograd.h"
#include "q8_packed.h"
#include "q8_quantize.h"

int sw_cpu_entry_supports(sw_backend *be, sw_capability cap, int64_t a, int64_t b)
{
    switch (cap) {
    case SW_CAP_HOST_MEMORY:
    case SW_CAP_HEAD_MAJOR_KV:
    case SW_CAP_GATHER_LINEAR:
    case SW_CAP_AFFINE_RELU_ROWS:
    case SW_CAP_SPAN_ABS_POOL: return 1;
    case SW_CAP_CONV3X3: return sw_winograd_ok(a, b);
    case SW_CAP_CONV3X3_SINGLE: return a == 1 && b >= 8 && b % 8 == 0;
    /* halves widened as they are read: a transposed product's b in float16
     * or bfloat16 (bf16_gemm.h), a float16 table of rows; not every op */
    case SW_CAP_HALF_TRANSPOSED_B: return a == SW_F16 || a == SW_BF16;
    case SW_CAP_HALF_TABLE: return a == SW_F16;
    case SW_CAP_HALF_WEIGHTS:
    default: return 0;
    }
}

/* A weight the narrow kernel multiplies (narrow_gemm.h) is kept transposed,
 * [in, out], so that no call transposes it. */
sw_status sw_cpu_entry_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout,
                                      sw_error *err)
{
    *layout = SW_LAYOUT_OUT_IN;
    if (w->dtype != SW_F32 || w->ndim != 2)
        return sw_fail(err, SW_ERR_ARG, "prepare_linear: expects a float32 matrix");
    int64_t out = w->shape[0], in = w->shape[1];
    if (!sw_cpu_gather_linear_wants_transposed(out))
        return SW_OK;
    sw_tensor t;
    int64_t shape[2] = {in, out};
    if (sw_tensor_new(be, SW_F32, 2, shape, &t, err) != SW_OK)
        return err->code;
    const float *src = w->data;
    float *wt = t.data;
    for (int64_t o = 0; o < out; o++)
        for (int64_t k = 0; k < in; k++)
            wt[k * out + o] = src[o * in + k];
    sw_tensor_free(w);
    *w = t;
    *layout = SW_LAYOUT_IN_OUT;
    return SW_OK;
}

/* One range of rows quantized on a worker (the host holds a float32 row per
 * worker, never a float32 copy). With `packed` the range counts blocks of
 * 16 rows, quantized into a block buffer and written in the packed layout
 * (q8_packed.h). */
typedef struct q8_rows {
    const void *src;
    sw_dtype dtype;
    int64_t rows, cols;
    int8_t *q;
    float *scale;
    int32_t *sums;
    int packed;
    atomic_int failed; /* a worker could not get its buffers */
} q8_rows;

static void quantize_range(void *ctx, size_t begin, size_t end)
{
    q8_rows *j = ctx;
    size_t cols = (size_t)j->cols;
    float *row = malloc(cols * sizeof *row);
    int8_t *block = j->packed ? malloc(16 * cols) : NULL;
    if (!row || (j->packed && !block)) {
        atomic_store(&j->failed, 1);
    } else if (!j->packed) {
        sw_q8_quantize_matrix_rows(j->src, j->dtype, j->cols, begin, end, row, j->q + begin * cols,
                                   j->scale, j->sums);
    } else {
        for (size_t b = begin; b < end; b++) {
            size_t r0 = 16 * b, r1 = r0 + 16 < (size_t)j->rows ? r0 + 16 : (size_t)j->rows;
            sw_q8_quantize_matrix_rows(j->src, j->dtype, j->cols, r0, r1, row, block, j->scale,
                                       j->sums);
            /* one block of this weight, or its last rows as they are */
            sw_q8_pack_blocks(block, (int)(r1 - r0), (int)cols, 0, 1, j->q + r0 * cols);
        }
    }
    free(row);
    free(block);
}

/* Quantized straight into the pool's memory (a staging copy was a second
 * round of fresh pages), in the packed layout where it fits, on the
 * workers: for large-v3 this writes 1.5 GB of fresh pages, and the kernel
 * hands them out faster to two threads than to one. */
sw_status sw_cpu_entry_prepare_q8(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows,
                                  int64_t cols, sw_tensor *w, sw_tensor *scale, sw_tensor *sum,
                                  sw_error *err)
{
    int packed = rows <= INT_MAX && cols <= INT_MAX && sw_q8_packable((int)rows, (int)cols);
    int64_t shape[2] = {rows, cols};
    if (sw_tensor_new(be, packed ? SW_I8_PACKED : SW_I8, 2, shape, w, err) != SW_OK ||
        sw_tensor_new(be, SW_F32, 1, &rows, scale, err) != SW_OK ||
        sw_tensor_new(be, SW_I32, 1, &rows, sum, err) != SW_OK)
        return err->code;
    q8_rows j = {.src = src,
                 .dtype = dtype,
                 .rows = rows,
                 .cols = cols,
                 .q = w->data,
                 .scale = scale->data,
                 .sums = sum->data,
                 .packed = packed,
                 .failed = 0};
    size_t min_rows = cols > 0 && cols < 65536 ? (size_t)(65536 / cols) : 1;
    if (packed)
        sw_cpu_backend_parallel_for(be, (size_t)(rows + 15) / 16, (min_rows + 15) / 16,
                                    quantize_range, &j);
    else
        sw_cpu_backend_parallel_for(be, (size_t)rows, min_rows, quantize_range, &j);
    if (atomic_load(&j.failed))
        return sw_fail(err, SW_ERR_NOMEM, "out of host memory quantizing a %lld x %lld weight",
                       (long long)rows, (long long)cols);
    return SW_OK;
}

sw_status sw_cpu_entry_gather_linear(sw_backend *be, const sw_tensor *x, const sw_tensor *ids,
                                     int taps, const sw_tensor *w, sw_weight_layout layout,
                                     const sw_tensor *bias, int relu, int64_t block, sw_tensor *y,
                                     sw_error *err)
{
    return sw_cpu_gather_linear(x, ids, taps, w, layout == SW_LAYOUT_IN_OUT, bias, relu, block, y,
                                err);
}

/* Winograd's transform of w, read in either layout as [3, 3, C_in, C_out]. */
sw_status sw_cpu_entry_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                                       int stride, sw_tensor *u, sw_error *err)
{
    int64_t out = layout == SW_LAYOUT_IN_OUT ? w->shape[1] : w->shape[0];
    int64_t in = out > 0 ? sw_tensor_numel(w) / (9 * out) : 0;
    if (w->dtype != SW_F32 || w->ndim != 2 || !sw_winograd_ok(in, out) ||
        (stride != 1 && stride != 2))
        return sw_fail(err, SW_ERR_ARG,
                       "prepare_conv3x3: a float32 3x3 weight of channels in "
                       "multiples of 8, stride 1 or 2, expected");
    float *taps = malloc((size_t)(9 * in * out) * sizeof *taps); /* [3, 3, in, out] */
    if (!taps)
        return sw_fail(err, SW_ERR_NOMEM, "prepare_conv3x3: out of host memory");
    const float *src = w->data;
    for (int64_t t = 0; t < 9; t++)
        for (int64_t ci = 0; ci < in; ci++)
            for (int64_t co = 0; co < out; co++)
                taps[(t * in + ci) * out + co] = layout == SW_LAYOUT_IN_OUT
                                                     ? src[(t * in + ci) * out + co]
                                                     : src[(co * 9 + t) * in + ci];
    int64_t shape[2] = {(stride == 2 ? SW_WINOGRAD_STRIDED_ROWS : SW_WINOGRAD_POINTS) * in, out};
    if (sw_tensor_new(be, SW_F32, 2, shape, u, err) == SW_OK) {
        if (stride == 2)
            sw_winograd_columns_weights(taps, in, out, u->data);
        else
            sw_winograd_weights(taps, in, out, u->data);
    }
    free(taps);
    return err->code;
}

sw_status sw_cpu_entry_conv3x3(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                               const int64_t *off, const sw_tensor *u, int stride,
                               const sw_tensor *bias, const sw_tensor *add, int relu, sw_tensor *y,
                               sw_error *err)
{
    if (stride == 1)
        return sw_cpu_winograd3x3(x, h, batch, off, u, bias, add, relu, y, err);
    if (stride == 2)
        return sw_cpu_winograd3x3_rows2(x, h, batch, off, u, bias, add, relu, y, err);
    return sw_fail(err, SW_ERR_ARG, "conv3x3: stride %d (1 or 2)", stride);
}

sw_status sw_cpu_entry_conv3x3_single(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                                      const int64_t *off, const sw_tensor *w, const sw_tensor *bias,
                                      int relu, sw_tensor *y, sw_error *err)
{
    if (w->dtype != SW_F32 || sw_tensor_numel(w) != 9 * sw_row_len(y) ||
        (bias && (bias->dtype != SW_F32 || sw_tensor_numel(bias) != sw_row_len(y))))
        return sw_fail(err, SW_ERR_ARG, "conv3x3_single: w [9, C] and bias [C] float32 expected");
    return sw_cpu_conv3x3_single(x, h, batch, off, w->data, bias ? bias->data : NULL, relu, y, err);
}

sw_status sw_cpu_entry_affine_relu_rows(sw_backend *be, const sw_tensor *src, int64_t ld, int64_t n,
                                        int64_t c, const sw_tensor *scale, const sw_tensor *shift,
                                        sw_tensor *dst, sw_error *err)
{
    if (sw_tensor_numel(scale) < c || sw_tensor_numel(shift) < c || sw_tensor_numel(dst) < n * c ||
        (n > 0 && sw_tensor_numel(src) < (n - 1) * ld + c))
        return sw_fail(err, SW_ERR_ARG, "affine_relu_rows: operands smaller than n, c, ld say");
    return sw_cpu_affine_relu_rows(be, src->data, ld, n, c, scale->data, shift->data, dst->data,
                                   err);
}

sw_status sw_cpu_entry_span_abs_pool(sw_backend *be, const sw_tensor *span, const int64_t *first,
                                     const float *scale, const float *shift, int pool, sw_tensor *y,
                                     sw_error *err)
{
    return sw_cpu_span_abs_pool(span, first, scale, shift, pool, y, err);
}
