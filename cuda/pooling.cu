/* The last steps of the speaker embeddings and the VAD's front end on the GPU
 * (backend.h, ABI 5): statistics pooling, magnitudes of complex rows, row L2
 * normalisation. Each output is summed by one thread in the CPU backend's
 * order with rounded operations that nvcc never fuses (__dmul_rn, ...), so
 * the results are the CPU's to the bit: the pooled sizes are small (a few
 * thousand statistics per item), the order is what matters. */
#include <math.h>

#include "cuda_internal.h"

/* One thread per (pool, group, channel); channels fastest, so a warp reads
 * consecutive floats of each frame. */
__global__ void stats_pool_f32(const float *x, const float *w, float *out, int64_t m, int64_t g_len,
                               int64_t t_len, int64_t c, double eps, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t k = o % c, g = (o / c) % g_len, item = o / (c * g_len), b = item / m;
        const float *wi = w ? w + item * t_len : NULL;
        const float *src = x + (b * g_len + g) * t_len * c + k;
        double v1 = 0.0, v2 = 0.0, mean = 0.0, sq = 0.0;
        for (int64_t t = 0; t < t_len; t++) {
            double wt = wi ? (double)wi[t] : 1.0;
            v1 = __dadd_rn(v1, wt);
            v2 = __dadd_rn(v2, __dmul_rn(wt, wt));
            mean = __dadd_rn(mean, __dmul_rn(wt, (double)src[t * c]));
        }
        mean /= v1;
        for (int64_t t = 0; t < t_len; t++) {
            double wt = wi ? (double)wi[t] : 1.0, d = (double)src[t * c] - mean;
            sq = __dadd_rn(sq, __dmul_rn(__dmul_rn(wt, d), d));
        }
        float *dst = out + item * 2 * c * g_len + k * g_len + g;
        dst[0] = (float)mean;
        dst[c * g_len] = (float)sqrt(__dadd_rn(sq / (v1 - v2 / v1), eps));
    }
}

sw_status sw_cuda_stats_pool(sw_backend *be, const sw_tensor *x, const sw_tensor *w, double eps,
                             sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(out) / 2;
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    int four = x->ndim == 4;
    SW_LAUNCH(stats_pool_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)x->data, w ? (const float *)w->data : NULL, (float *)out->data,
     w ? w->shape[1] : 1, four ? x->shape[1] : 1, x->shape[x->ndim - 2], x->shape[x->ndim - 1], eps,
     n);
    return sw_cuda_check_launch(c, err, "stats_pool");
}

/* ---- magnitudes: one thread per bin ---- */

__global__ void magnitude_f32(const float *a, float *out, int64_t k, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        const float *re = a + (o / k) * 2 * k + o % k;
        float r = re[0], i = re[k];
        out[o] = sqrtf(__fadd_rn(__fmul_rn(r, r), __fmul_rn(i, i)));
    }
}

sw_status sw_cuda_magnitude(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(out), k = sw_cuda_last_dim(out);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(magnitude_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (float *)out->data, k, n);
    return sw_cuda_check_launch(c, err, "magnitude");
}

/* ---- L2 normalisation: one thread per row (embeddings: a few hundred
 * values, one row per item), summed in the CPU's order ---- */

__global__ void l2_normalize_f32(const float *a, float *out, int64_t len, double eps, int64_t rows)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += step) {
        const float *x = a + r * len;
        float *y = out + r * len;
        double norm = 0.0;
        for (int64_t i = 0; i < len; i++)
            norm = __dadd_rn(norm, __dmul_rn((double)x[i], (double)x[i]));
        float scale = (float)(1.0 / fmax(sqrt(norm), eps));
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] * scale;
    }
}

sw_status sw_cuda_l2_normalize(sw_backend *be, const sw_tensor *a, float eps, sw_tensor *out,
                               sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t len = sw_cuda_last_dim(a), rows = len ? sw_cuda_numel(a) / len : 0;
    sw_status st;
    if (!sw_cuda_enter_work(c, rows, &st, err))
        return st;
    SW_LAUNCH(l2_normalize_f32, sw_cuda_grid(c, rows, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
              c->stream)
    ((const float *)a->data, (float *)out->data, len, (double)eps, rows);
    return sw_cuda_check_launch(c, err, "l2_normalize");
}
