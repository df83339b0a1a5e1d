/* The fused entries CAM++ and segmentation call (backend.h, ABI 6) on the
 * GPU, so that the models have one path on every backend: gather_linear,
 * prepare_conv3x3 and conv3x3, conv3x3_single, affine_relu_rows and
 * span_abs_pool. A convolution is its im2col gathered on the device (the
 * taps found from the images' offsets, never a table of ids from the host),
 * one cuBLAS product per block of output rows, and one pass for the bias,
 * the residual and the ReLU; the element-wise entries are one kernel each,
 * with the CPU's roundings (__fmul_rn, __fadd_rn: nvcc fuses nothing), so
 * their answers are the CPU's to the bit. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "elementwise_math.h"

/* The most floats of im2col one product reads: 64 MiB of scratch, so a
 * batch of CAM++'s 2-D front is a few blocks (launches), never a copy of
 * the whole im2col. */
#define SW_FUSED_BLOCK_FLOATS ((int64_t)1 << 24)

static sw_status need_f32(const sw_tensor *t, const char *op, const char *name, sw_error *err)
{
    if (t && t->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG, "cuda %s: %s must be float32", op, name);
    return SW_OK;
}

/* A float32 [d0, d1] tensor of the backend's own memory. */
static sw_status new_matrix(sw_backend *be, int64_t d0, int64_t d1, sw_tensor *t, sw_error *err)
{
    memset(t, 0, sizeof *t);
    t->dtype = SW_F32;
    t->ndim = 2;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->data = be->alloc(be, (size_t)(d0 * d1) * sizeof(float), err);
    if (!t->data)
        return err->code ? err->code : sw_fail(err, SW_ERR_NOMEM, "GPU allocation failed");
    t->backend = be;
    return SW_OK;
}

/* A borrowed [d0, d1] view of float32 device memory. */
static sw_tensor matrix_view(const void *data, int64_t d0, int64_t d1)
{
    sw_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = SW_F32;
    t.ndim = 2;
    t.shape[0] = d0;
    t.shape[1] = d1;
    t.data = (void *)data;
    return t;
}

/* ---- the finish of a product: bias, residual, ReLU ---- */

/* y = relu?(y + bias[column] + add), in the order the CPU's kernels and the
 * composed ops (add, add, leaky_relu(0)) take them. */
__global__ void finish_rows_f32(float *y, const float *bias, const float *add, int64_t c, int relu,
                                int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        float v = y[o];
        if (bias)
            v = __fadd_rn(v, bias[o % c]);
        if (add)
            v = __fadd_rn(v, add[o]);
        y[o] = relu ? sw_leaky_relu_bits(v, 0u) : v;
    }
}

static sw_status finish(sw_cuda *c, float *y, const sw_tensor *bias, const sw_tensor *add,
                        int64_t cols, int relu, int64_t n, sw_error *err)
{
    if ((!bias && !add && !relu) || n == 0)
        return SW_OK;
    SW_LAUNCH(finish_rows_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    (y, bias ? (const float *)bias->data : NULL, add ? (const float *)add->data : NULL, cols, relu,
     n);
    return sw_cuda_check_launch(c, err, "finish_rows");
}

/* ---- gather_linear ---- */

/* cols [rows * taps, c_in] = x's rows ids[0 .. rows * taps - 1] (zeros for
 * an id out of range): row r of the product reads its taps side by side. */
__global__ void gather_taps_f32(const float *x, int64_t x_rows, int64_t c_in, const int32_t *ids,
                                float *cols, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t id = ids[o / c_in];
        cols[o] = id >= 0 && id < x_rows ? x[id * c_in + o % c_in] : 0.0f;
    }
}

/* Output rows of one product: its im2col at most SW_FUSED_BLOCK_FLOATS. */
static int64_t block_rows(int64_t width, int64_t n_out)
{
    int64_t rows = SW_FUSED_BLOCK_FLOATS / (width > 0 ? width : 1);
    rows = rows < 1 ? 1 : rows;
    return rows < n_out ? rows : n_out;
}

/* The weight as matmul's b: [c_out, width] read transposed, or [width,
 * c_out] as it lies. */
static sw_tensor weight_view(const sw_tensor *w, sw_weight_layout layout, int64_t c_out,
                             int64_t width, int *trans_b)
{
    *trans_b = layout != SW_LAYOUT_IN_OUT;
    return *trans_b ? matrix_view(w->data, c_out, width) : matrix_view(w->data, width, c_out);
}

/* The CPU reads the caller's `block` as the rows one worker takes; here a
 * block is the rows one product takes, sized by the scratch (block_rows). */
sw_status sw_cuda_gather_linear(sw_backend *be, const sw_tensor *x, const sw_tensor *ids, int taps,
                                const sw_tensor *w, sw_weight_layout layout, const sw_tensor *bias,
                                int relu, int64_t block, sw_tensor *y, sw_error *err)
{
    (void)block;
    sw_cuda *c = sw_cuda_of(be);
    if (need_f32(x, "gather_linear", "x", err) || need_f32(w, "gather_linear", "w", err) ||
        need_f32(bias, "gather_linear", "bias", err) || need_f32(y, "gather_linear", "y", err))
        return SW_ERR_ARG;
    int64_t c_in = sw_cuda_last_dim(x), width = (int64_t)taps * c_in;
    int64_t c_out = w->ndim == 2 ? w->shape[layout == SW_LAYOUT_IN_OUT ? 1 : 0] : 0;
    int64_t n_out =
        ids ? (taps > 0 ? sw_cuda_numel(ids) / taps : 0) : (c_in > 0 ? sw_cuda_numel(x) / c_in : 0);
    if (taps < 1 || (!ids && taps != 1) || (ids && (ids->dtype != SW_I32 || c_in < 1)) ||
        w->ndim != 2 || sw_cuda_numel(w) != width * c_out || sw_cuda_numel(y) != n_out * c_out ||
        (ids && sw_cuda_numel(ids) != n_out * taps) || (bias && sw_cuda_numel(bias) != c_out))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda gather_linear: x [rows, C_in], ids [n * taps] int32 (or none, taps "
                       "1), w [C_out, taps * C_in] (or its transpose), bias [C_out], y [n, C_out]");
    if (n_out == 0 || c_out == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    int trans_b;
    sw_tensor wv = weight_view(w, layout, c_out, width, &trans_b);
    float *out = (float *)y->data;
    if (!ids) { /* a plain product over x's rows */
        sw_tensor a = matrix_view(x->data, n_out, width), yv = matrix_view(out, n_out, c_out);
        st = sw_cuda_matmul(be, &a, &wv, &yv, trans_b, 1.0f, 0.0f, err);
    } else {
        int64_t rows = block_rows(width, n_out), x_rows = sw_cuda_numel(x) / c_in;
        sw_tensor cols;
        if (new_matrix(be, rows, width, &cols, err) != SW_OK)
            return err->code;
        for (int64_t r0 = 0; r0 < n_out && st == SW_OK; r0 += rows) {
            int64_t m = n_out - r0 < rows ? n_out - r0 : rows, n = m * width;
            SW_LAUNCH(gather_taps_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
                      c->stream)
            ((const float *)x->data, x_rows, c_in, (const int32_t *)ids->data + r0 * taps,
             (float *)cols.data, n);
            st = sw_cuda_check_launch(c, err, "gather_taps");
            sw_tensor a = matrix_view(cols.data, m, width),
                      yv = matrix_view(out + r0 * c_out, m, c_out);
            if (st == SW_OK)
                st = sw_cuda_matmul(be, &a, &wv, &yv, trans_b, 1.0f, 0.0f, err);
        }
        be->free(be, cols.data); /* stream order: its next user runs after */
    }
    if (st == SW_OK)
        st = finish(c, out, bias, NULL, c_out, relu, n_out * c_out, err);
    return st;
}

/* Kept as loaded, [out, in]: cuBLAS reads either layout at the same speed. */
sw_status sw_cuda_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout,
                                 sw_error *err)
{
    (void)be;
    *layout = SW_LAYOUT_OUT_IN;
    if (w->dtype != SW_F32 || w->ndim != 2)
        return sw_fail(err, SW_ERR_ARG, "cuda prepare_linear: expects a float32 matrix");
    return SW_OK;
}

/* ---- 3x3 convolutions over channels-last images ---- */

/* The image that global row `row` of a layout of `rows_per_col` rows per
 * column lies in: the last b with rows_per_col * off[b] <= row. */
static __device__ __forceinline__ int image_of(const int64_t *off, int batch, int64_t rows_per_col,
                                               int64_t row)
{
    int lo = 0, hi = batch - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (rows_per_col * off[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* cols [m, 9 * c_in] for output rows r0 .. r0 + m - 1: tap t = 3 dr + dc of
 * output (image row f, column t) reads input row f * stride + dr - 1, column
 * t + dc - 1 of its image (zeros outside), as [C_out, 9 * C_in]'s rows are
 * laid out. */
__global__ void im2col3x3_f32(const float *x, const int64_t *off, int batch, int64_t h,
                              int64_t h_out, int stride, int64_t c_in, int64_t r0, float *cols,
                              int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x, width = 9 * c_in;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t row = r0 + o / width, k = o % width, tap = k / c_in, ci = k % c_in;
        int b = image_of(off, batch, h_out, row);
        int64_t wd = off[b + 1] - off[b], local = row - h_out * off[b];
        int64_t f = (local / wd) * stride + tap / 3 - 1, t = local % wd + tap % 3 - 1;
        cols[o] =
            f < 0 || f >= h || t < 0 || t >= wd ? 0.0f : x[(h * off[b] + f * wd + t) * c_in + ci];
    }
}

/* The taps as cuBLAS reads them, [C_out, 9 * C_in], at either stride. */
sw_status sw_cuda_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                                  int stride, sw_tensor *u, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    memset(u, 0, sizeof *u);
    int64_t out = w->ndim == 2 ? w->shape[layout == SW_LAYOUT_IN_OUT ? 1 : 0] : 0;
    int64_t in = out > 0 ? sw_cuda_numel(w) / (9 * out) : 0;
    if (w->dtype != SW_F32 || w->ndim != 2 || in < 1 || sw_cuda_numel(w) != 9 * in * out ||
        (stride != 1 && stride != 2))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda prepare_conv3x3: a float32 3x3 weight [C_out, 9 * C_in] (or its "
                       "transpose), stride 1 or 2, expected");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK || new_matrix(be, out, 9 * in, u, err) != SW_OK)
        return err->code;
    if (layout == SW_LAYOUT_IN_OUT) {
        st = sw_cuda_transpose(be, w, u, err);
    } else {
        cudaError_t e = cudaMemcpyAsync(u->data, w->data, (size_t)(9 * in * out) * sizeof(float),
                                        cudaMemcpyDeviceToDevice, c->stream);
        sw_cuda_count_launch(c);
        st = e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "copying a weight on the GPU");
    }
    if (st != SW_OK) {
        be->free(be, u->data);
        memset(u, 0, sizeof *u);
    }
    return st;
}

/* The images' column offsets on the device (batch + 1 of them): one small
 * copy up, staged, so the host does not wait. */
static int64_t *upload_offsets(sw_backend *be, const int64_t *off, int batch, sw_error *err)
{
    size_t bytes = (size_t)(batch + 1) * sizeof *off;
    int64_t *d = (int64_t *)be->alloc(be, bytes, err);
    if (d && be->upload(be, d, off, bytes, err) != SW_OK) {
        be->free(be, d);
        d = NULL;
    }
    return d;
}

/* Columns of every image, and that the offsets rise. */
static int offsets_ok(const int64_t *off, int batch)
{
    if (!off || batch < 1 || off[0] != 0)
        return 0;
    for (int b = 0; b < batch; b++)
        if (off[b + 1] <= off[b])
            return 0;
    return 1;
}

sw_status sw_cuda_conv3x3(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                          const int64_t *off, const sw_tensor *u, int stride, const sw_tensor *bias,
                          const sw_tensor *add, int relu, sw_tensor *y, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (need_f32(x, "conv3x3", "x", err) || need_f32(u, "conv3x3", "u", err) ||
        need_f32(bias, "conv3x3", "bias", err) || need_f32(add, "conv3x3", "add", err) ||
        need_f32(y, "conv3x3", "y", err))
        return SW_ERR_ARG;
    int64_t c_in = sw_cuda_last_dim(x), c_out = sw_cuda_last_dim(y);
    int64_t h_out = (h - 1) / (stride > 0 ? stride : 1) + 1;
    if ((stride != 1 && stride != 2) || h < 1 || !offsets_ok(off, batch) || c_in < 1 || c_out < 1 ||
        sw_cuda_numel(x) != h * off[batch] * c_in ||
        sw_cuda_numel(y) != h_out * off[batch] * c_out || sw_cuda_numel(u) != 9 * c_in * c_out ||
        (bias && sw_cuda_numel(bias) != c_out) || (add && sw_cuda_numel(add) != sw_cuda_numel(y)))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda conv3x3: x [h * columns, C_in], y and add [(h - 1) / stride + 1) * "
                       "columns, C_out], u from prepare_conv3x3, stride 1 or 2: shapes do not "
                       "agree");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    int64_t n_out = h_out * off[batch], width = 9 * c_in, rows = block_rows(width, n_out);
    int64_t *d_off = upload_offsets(be, off, batch, err);
    sw_tensor cols = {};
    if (!d_off || new_matrix(be, rows, width, &cols, err) != SW_OK) {
        be->free(be, d_off);
        return err->code;
    }
    sw_tensor wv = matrix_view(u->data, c_out, width);
    float *out = (float *)y->data;
    for (int64_t r0 = 0; r0 < n_out && st == SW_OK; r0 += rows) {
        int64_t m = n_out - r0 < rows ? n_out - r0 : rows, n = m * width;
        SW_LAUNCH(im2col3x3_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
        ((const float *)x->data, d_off, batch, h, h_out, stride, c_in, r0, (float *)cols.data, n);
        st = sw_cuda_check_launch(c, err, "im2col3x3");
        sw_tensor a = matrix_view(cols.data, m, width),
                  yv = matrix_view(out + r0 * c_out, m, c_out);
        if (st == SW_OK)
            st = sw_cuda_matmul(be, &a, &wv, &yv, 1, 1.0f, 0.0f, err);
    }
    be->free(be, cols.data);
    be->free(be, d_off);
    if (st == SW_OK)
        st = finish(c, out, bias, add, c_out, relu, n_out * c_out, err);
    return st;
}

/* One thread per (pixel, channel): the nine taps summed from zero with the
 * CPU's roundings, then the bias, then the ReLU (cpu_conv_single.c). */
__global__ void conv3x3_single_f32(const float *x, const int64_t *off, int batch, int64_t h,
                                   const float *w, const float *bias, int relu, float *y, int64_t c,
                                   int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t pix = o / c, ch = o % c;
        int b = image_of(off, batch, h, pix);
        int64_t wd = off[b + 1] - off[b], local = pix - h * off[b];
        int64_t f = local / wd, t = local % wd;
        const float *img = x + h * off[b];
        float acc = 0.0f;
        for (int k = 0; k < 9; k++) {
            int64_t r = f + k / 3 - 1, col = t + k % 3 - 1;
            float in = r < 0 || r >= h || col < 0 || col >= wd ? 0.0f : img[r * wd + col];
            acc = __fadd_rn(acc, __fmul_rn(in, w[k * c + ch]));
        }
        if (bias)
            acc = __fadd_rn(acc, bias[ch]);
        y[o] = relu ? sw_leaky_relu_bits(acc, 0u) : acc;
    }
}

sw_status sw_cuda_conv3x3_single(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                                 const int64_t *off, const sw_tensor *w, const sw_tensor *bias,
                                 int relu, sw_tensor *y, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (need_f32(x, "conv3x3_single", "x", err) || need_f32(w, "conv3x3_single", "w", err) ||
        need_f32(bias, "conv3x3_single", "bias", err) || need_f32(y, "conv3x3_single", "y", err))
        return SW_ERR_ARG;
    int64_t ch = sw_cuda_last_dim(y);
    if (h < 1 || !offsets_ok(off, batch) || ch < 1 || sw_cuda_numel(x) != h * off[batch] ||
        sw_cuda_numel(y) != h * off[batch] * ch || sw_cuda_numel(w) != 9 * ch ||
        (bias && sw_cuda_numel(bias) != ch))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda conv3x3_single: x [h * columns, 1], w [9, C], bias [C], y [h * "
                       "columns, C]: shapes do not agree");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    int64_t *d_off = upload_offsets(be, off, batch, err);
    if (!d_off)
        return err->code;
    int64_t n = sw_cuda_numel(y);
    SW_LAUNCH(conv3x3_single_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
              c->stream)
    ((const float *)x->data, d_off, batch, h, (const float *)w->data,
     bias ? (const float *)bias->data : NULL, relu, (float *)y->data, ch, n);
    st = sw_cuda_check_launch(c, err, "conv3x3_single");
    be->free(be, d_off);
    return st;
}

/* ---- affine_relu_rows: a folded BatchNorm and its ReLU ---- */

__global__ void affine_relu_rows_f32(const float *src, int64_t ld, int64_t c, const float *scale,
                                     const float *shift, float *dst, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t r = o / c, k = o % c;
        float v = __fadd_rn(__fmul_rn(src[r * ld + k], scale[k]), shift[k]);
        dst[o] = sw_leaky_relu_bits(v, 0u);
    }
}

sw_status sw_cuda_affine_relu_rows(sw_backend *be, const sw_tensor *src, int64_t ld, int64_t n,
                                   int64_t c, const sw_tensor *scale, const sw_tensor *shift,
                                   sw_tensor *dst, sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    if (need_f32(src, "affine_relu_rows", "src", err) ||
        need_f32(scale, "affine_relu_rows", "scale", err) ||
        need_f32(shift, "affine_relu_rows", "shift", err) ||
        need_f32(dst, "affine_relu_rows", "dst", err))
        return SW_ERR_ARG;
    if (n < 0 || c < 0 || ld < c || sw_cuda_numel(scale) < c || sw_cuda_numel(shift) < c ||
        sw_cuda_numel(dst) < n * c || (n > 0 && sw_cuda_numel(src) < (n - 1) * ld + c))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda affine_relu_rows: operands smaller than n, c, ld say");
    if (n == 0 || c == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;
    SW_LAUNCH(affine_relu_rows_f32, sw_cuda_grid(cu, n * c, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
              cu->stream)
    ((const float *)src->data, ld, c, (const float *)scale->data, (const float *)shift->data,
     (float *)dst->data, n * c);
    return sw_cuda_check_launch(cu, err, "affine_relu_rows");
}

/* ---- span_abs_pool: SincNet's first layer over every window of a span ---- */

/* One thread per (window, pooled frame, channel), the CPU's operations in
 * its order: scaled, shifted, made a magnitude, the maximum kept (a NaN
 * wins, as max_pool1d's). */
__global__ void span_abs_pool_f32(const float *span, const int64_t *first, const float *scale,
                                  const float *shift, int pool, float *y, int64_t t_out, int64_t c,
                                  int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t ch = o % c, item = o / c, b = item / t_out, t = item % t_out;
        const float *src = span + (first[b] + t * pool) * c + ch;
        float s = scale[b], sh = shift[b * c + ch];
        float best = fabsf(__fadd_rn(__fmul_rn(src[0], s), sh));
        for (int k = 1; k < pool; k++) {
            float v = fabsf(__fadd_rn(__fmul_rn(src[k * c], s), sh));
            best = v > best || v != v ? v : best;
        }
        y[o] = best;
    }
}

/* first, scale and shift come from the host: one staged copy up of the
 * three, side by side. */
sw_status sw_cuda_span_abs_pool(sw_backend *be, const sw_tensor *span, const int64_t *first,
                                const float *scale, const float *shift, int pool, sw_tensor *y,
                                sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (need_f32(span, "span_abs_pool", "span", err) || need_f32(y, "span_abs_pool", "y", err))
        return SW_ERR_ARG;
    if (y->ndim != 3 || pool < 1 || !first || !scale || !shift ||
        y->shape[2] != sw_cuda_last_dim(span))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda span_abs_pool: y [B, T, C] with span's C, pool >= 1, first, scale "
                       "and shift needed");
    int64_t batch = y->shape[0], t_out = y->shape[1], ch = y->shape[2];
    int64_t rows = ch > 0 ? sw_cuda_numel(span) / ch : 0, n = batch * t_out * ch;
    for (int64_t b = 0; b < batch; b++)
        if (first[b] < 0 || first[b] + t_out * pool > rows)
            return sw_fail(err, SW_ERR_ARG, "cuda span_abs_pool: window %lld leaves the span",
                           (long long)b);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    /* [first: B int64][scale: B floats, padded to 8 bytes][shift: B * C floats] */
    size_t at_scale = (size_t)batch * sizeof(int64_t);
    size_t at_shift = at_scale + ((size_t)batch * sizeof(float) + 7) / 8 * 8;
    size_t bytes = at_shift + (size_t)(batch * ch) * sizeof(float);
    unsigned char *host = (unsigned char *)malloc(bytes);
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "cuda span_abs_pool: out of host memory");
    memcpy(host, first, (size_t)batch * sizeof(int64_t));
    memset(host + at_scale, 0, at_shift - at_scale);
    memcpy(host + at_scale, scale, (size_t)batch * sizeof(float));
    memcpy(host + at_shift, shift, (size_t)(batch * ch) * sizeof(float));
    unsigned char *dev = (unsigned char *)be->alloc(be, bytes, err);
    st = dev ? be->upload(be, dev, host, bytes, err) : err->code;
    free(host); /* the upload took its bytes */
    if (st == SW_OK) {
        SW_LAUNCH(span_abs_pool_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
                  c->stream)
        ((const float *)span->data, (const int64_t *)dev, (const float *)(dev + at_scale),
         (const float *)(dev + at_shift), pool, (float *)y->data, t_out, ch, n);
        st = sw_cuda_check_launch(c, err, "span_abs_pool");
    }
    be->free(be, dev);
    return st;
}
