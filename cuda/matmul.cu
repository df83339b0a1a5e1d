/* Row-major matmul through cuBLAS, which is column-major. A row-major [r,c]
 * block read column-major is its transpose [c,r], so instead of transposing
 * anything we ask cuBLAS for c^T = op(b)^T a^T: the bytes of a row-major c are
 * the bytes of a column-major c^T. */
#include <limits.h>

#include "cuda_internal.h"
#include "half_convert.h"

sw_status sw_cuda_matmul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                         int trans_b, float alpha, float beta, sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    int half = sw_cuda_is_half(b->dtype);
    if ((!half && (a->dtype != SW_F32 || b->dtype != SW_F32)) || c->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda matmul: f32 operands, or b f16/bf16 with a f32 or b's type; c f32");
    /* Leading dimensions of a and c fold into m, so [batch, t, k] works too. */
    int64_t n = sw_cuda_last_dim(c);
    int64_t m = n > 0 ? sw_cuda_numel(c) / n : 0;
    int64_t k = sw_cuda_last_dim(a);
    int64_t b_last = trans_b ? k : n;
    if (sw_cuda_numel(a) != m * k || sw_cuda_numel(b) != k * n || sw_cuda_last_dim(b) != b_last)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: shapes of a, b and c do not agree");
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: a dimension exceeds cuBLAS's int range");
    if (m == 0 || n == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;
    if (k == 0) {
        /* an empty sum: c = beta * c, as on the CPU. cuBLAS would refuse the
         * zero leading dimension of a (CUBLAS_STATUS_INVALID_VALUE). */
        if (beta != 0.0f)
            return sw_cuda_scale(be, c, beta, c, err);
        cudaError_t e = cudaMemsetAsync(c->data, 0, (size_t)(m * n) * sizeof(float), cu->stream);
        return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "clearing on the GPU");
    }

    if (half)
        return sw_cuda_matmul_half(be, a, b, c, trans_b, alpha, beta, m, n, k, err);

    /* Column-major view: c^T is n x m (ld n), a^T is k x m (ld k). b [k,n]
     * reads as b^T, n x k (ld n), already what we need; b [n,k] reads as
     * k x n (ld k) and needs OP_T to become n x k. */
    int opb = trans_b ? SW_CUBLAS_OP_T : SW_CUBLAS_OP_N;
    int ldb = trans_b ? (int)k : (int)n;
    int s = cu->blas->sgemm(cu->blas_handle, opb, SW_CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha,
                            (const float *)b->data, ldb, (const float *)a->data, (int)k, &beta,
                            (float *)c->data, (int)n);
    sw_cuda_count_launch(cu);
    if (s != SW_CUBLAS_STATUS_SUCCESS)
        return sw_fail(err, SW_ERR_DEVICE, "cuBLAS sgemm (m=%lld n=%lld k=%lld) failed: %s",
                       (long long)m, (long long)n, (long long)k, sw_cublas_status_name(s));
    return SW_OK;
}

/* ---- conv1d: im2col into a pool block, then one sgemm per batch item ---- */

/* cols[t, ci * k + kk] = x[t * stride + kk - pad, ci], zero outside the input;
 * cols in the weight's type, so a half weight meets half columns in GemmEx. */
template <typename T>
static __device__ __forceinline__ void im2col(const float *x, T *cols, int64_t t_in, int64_t c_in,
                                              int64_t k, int stride, int pad, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t width = c_in * k;
        int64_t t = o / width, ci = (o % width) / k, kk = o % k;
        int64_t ti = t * stride + kk - pad;
        sw_store(ti >= 0 && ti < t_in ? x[ti * c_in + ci] : 0.0f, cols + o);
    }
}

__global__ void im2col_f32(const float *x, float *cols, int64_t t_in, int64_t c_in, int64_t k,
                           int stride, int pad, int64_t n)
{
    im2col(x, cols, t_in, c_in, k, stride, pad, n);
}

__global__ void im2col_f16(const float *x, __half *cols, int64_t t_in, int64_t c_in, int64_t k,
                           int stride, int pad, int64_t n)
{
    im2col(x, cols, t_in, c_in, k, stride, pad, n);
}

__global__ void im2col_bf16(const float *x, __nv_bfloat16 *cols, int64_t t_in, int64_t c_in,
                            int64_t k, int stride, int pad, int64_t n)
{
    im2col(x, cols, t_in, c_in, k, stride, pad, n);
}

static sw_status launch_im2col(sw_cuda *cu, const float *x, sw_dtype dtype, void *cols,
                               int64_t t_in, int64_t c_in, int64_t k, int stride, int pad,
                               int64_t n, sw_error *err)
{
    unsigned grid = sw_cuda_grid(cu, n, SW_CUDA_THREADS);
    if (dtype == SW_F16)
        SW_LAUNCH(im2col_f16, grid, SW_CUDA_THREADS, 0, cu->stream)
    (x, (__half *)cols, t_in, c_in, k, stride, pad, n);
    else if (dtype == SW_BF16) SW_LAUNCH(im2col_bf16, grid, SW_CUDA_THREADS, 0, cu->stream)(
        x, (__nv_bfloat16 *)cols, t_in, c_in, k, stride, pad, n);
    else SW_LAUNCH(im2col_f32, grid, SW_CUDA_THREADS, 0, cu->stream)(x, (float *)cols, t_in, c_in,
                                                                     k, stride, pad, n);
    return sw_cuda_check_launch(cu, err, "im2col");
}

/* out[t, :] = bias, so the sgemm can accumulate onto it (beta = 1). */
__global__ void fill_rows_f32(float *out, const float *row, int64_t len, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step)
        out[o] = row[o % len];
}

/* The convolution with its columns in `cols` (the pool's block or the
 * caller's work): per batch item an im2col, the bias rows and one sgemm. */
static sw_status conv1d_into(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                             const sw_tensor *bias, int stride, int pad, void *cols, sw_tensor *out,
                             sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    int64_t b = x->shape[0], t_in = x->shape[1], c_in = x->shape[2];
    int64_t c_out = w->shape[0], k = w->shape[2], t_out = out->shape[1];
    int64_t width = c_in * k, n = t_out * width;
    sw_status st = SW_OK;
    sw_tensor tc = *x, tw = *w, to = *out;
    tc.dtype = w->dtype;
    tc.ndim = 2;
    tc.shape[0] = t_out;
    tc.shape[1] = width;
    tc.data = cols;
    tw.ndim = 2;
    tw.shape[0] = c_out;
    tw.shape[1] = width;
    to.ndim = 2;
    to.shape[0] = t_out;
    to.shape[1] = c_out;
    for (int64_t i = 0; i < b && st == SW_OK; i++) {
        st = launch_im2col(cu, (const float *)x->data + i * t_in * c_in, w->dtype, cols, t_in, c_in,
                           k, stride, pad, n, err);
        to.data = (float *)out->data + i * t_out * c_out;
        if (st == SW_OK && bias) {
            int64_t m = t_out * c_out;
            SW_LAUNCH(fill_rows_f32, sw_cuda_grid(cu, m, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
                      cu->stream)
            ((float *)to.data, (const float *)bias->data, c_out, m);
            st = sw_cuda_check_launch(cu, err, "fill_rows");
        }
        if (st == SW_OK)
            st = sw_cuda_matmul(be, &tc, &tw, &to, 1, 1.0f, bias ? 1.0f : 0.0f, err);
    }
    return st;
}

static sw_status conv1d_operands(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias,
                                 const sw_tensor *out, sw_error *err)
{
    if (x->ndim != 3 || w->ndim != 3 || out->ndim != 3 || x->dtype != SW_F32 ||
        (w->dtype != SW_F32 && !sw_cuda_is_half(w->dtype)) || out->dtype != SW_F32 ||
        (bias && bias->dtype != SW_F32))
        return sw_fail(err, SW_ERR_ARG,
                       "cuda conv1d: f32 x [B,T,C], w [O,C,K] (f32, f16 or bf16), out [B,T,O]");
    return SW_OK;
}

sw_status sw_cuda_conv1d(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                         const sw_tensor *bias, int stride, int pad, sw_tensor *out, sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    if (conv1d_operands(x, w, bias, out, err))
        return err->code;
    int64_t n = out->shape[1] * x->shape[2] * w->shape[2];
    if (x->shape[0] == 0 || out->shape[1] == 0 || w->shape[0] == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;
    void *cols = be->alloc(be, (size_t)n * (w->dtype == SW_F32 ? 4 : 2), err);
    if (!cols)
        return err->code;
    st = conv1d_into(be, x, w, bias, stride, pad, cols, out, err);
    be->free(be, cols); /* stream order: the next user of the block runs after */
    return st;
}

sw_status sw_cuda_conv1d_work(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                              const sw_tensor *bias, int stride, int pad, const sw_tensor *work,
                              sw_tensor *out, sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    if (conv1d_operands(x, w, bias, out, err))
        return err->code;
    size_t need = SW_CONV1D_WORK_BYTES(out->shape[1], x->shape[2], w->shape[2]);
    size_t have = work && work->data && work->dtype == SW_F32 ? (size_t)sw_cuda_numel(work) * 4 : 0;
    if (have < need)
        return sw_fail(err, SW_ERR_ARG, "cuda conv1d: the work holds %zu bytes of f32, %zu needed",
                       have, need);
    if (x->shape[0] == 0 || out->shape[1] == 0 || w->shape[0] == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;
    return conv1d_into(be, x, w, bias, stride, pad, work->data, out, err);
}
