/* Row reductions over the last dimension: softmax and layer norm. One block
 * per row, since rows here (a model dimension, a sequence length) are a few
 * hundred to a few thousand long and there are many of them. */
#include "cuda_internal.h"

#define WARP 32

/* Every thread gets the result, so no second broadcast step is needed.
 * `scratch` holds one value per warp. */
__device__ float block_reduce(float v, float *scratch, int is_max)
{
    for (int o = WARP / 2; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    int lane = threadIdx.x % WARP, warp = threadIdx.x / WARP;
    __syncthreads(); /* the previous reduction may still be reading scratch */
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    int warps = blockDim.x / WARP;
    v = lane < warps ? scratch[lane] : (is_max ? -INFINITY : 0.0f);
    for (int o = WARP / 2; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}

/* Subtracting the row maximum keeps expf from overflowing; expf (not __expf)
 * so results stay within the CPU tests' tolerance. */
__global__ void softmax_rows(const float *a, float *out, int64_t rows, int64_t n)
{
    __shared__ float scratch[WARP];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *x = a + r * n;
        float *y = out + r * n;
        float m = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            m = fmaxf(m, x[i]);
        m = block_reduce(m, scratch, 1);
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            s += expf(x[i] - m);
        s = block_reduce(s, scratch, 0);
        /* a fully masked row (all -inf) gives zeros, as the CPU backend does */
        float inv = m == -INFINITY ? 0.0f : 1.0f / s;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            y[i] = m == -INFINITY ? 0.0f : expf(x[i] - m) * inv;
    }
}

/* Two passes (mean, then squared deviations) rather than sum and sum of
 * squares: activations with a large mean would lose the variance otherwise. */
__global__ void layernorm_rows(const float *a, const float *gamma, const float *beta, float eps,
                               float *out, int64_t rows, int64_t n)
{
    __shared__ float scratch[WARP];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *x = a + r * n;
        float *y = out + r * n;
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            s += x[i];
        float mean = block_reduce(s, scratch, 0) / (float)n;
        float v = 0.0f;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            float d = x[i] - mean;
            v += d * d;
        }
        float var = block_reduce(v, scratch, 0) / (float)n;
        float inv = 1.0f / sqrtf(var + eps); /* not rsqrtf: that one is approximate */
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            y[i] = (x[i] - mean) * inv * gamma[i] + beta[i];
    }
}

static unsigned row_grid(int64_t rows)
{
    /* gridDim.x allows 2^31-1; the kernels loop past that. */
    return (unsigned)(rows < 0x7fffffff ? rows : 0x7fffffff);
}

sw_status sw_cuda_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_last_dim(a), total = sw_cuda_numel(a);
    if (a->dtype != SW_F32 || out->dtype != SW_F32 || sw_cuda_numel(out) != total)
        return sw_fail(err, SW_ERR_ARG, "cuda softmax: a and out must be f32 of one size");
    if (total == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    int64_t rows = total / n;
    softmax_rows<<<row_grid(rows), SW_CUDA_THREADS, 0, c->stream>>>((const float *)a->data,
                                                                    (float *)out->data, rows, n);
    return sw_cuda_check_launch(err, "softmax");
}

sw_status sw_cuda_layernorm(sw_backend *be, const sw_tensor *a, const sw_tensor *gamma,
                            const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_last_dim(a), total = sw_cuda_numel(a);
    if (a->dtype != SW_F32 || out->dtype != SW_F32 || gamma->dtype != SW_F32 ||
        beta->dtype != SW_F32 || sw_cuda_numel(out) != total || sw_cuda_numel(gamma) != n ||
        sw_cuda_numel(beta) != n)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda layernorm: f32 operands, gamma and beta of the last dimension");
    if (total == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    int64_t rows = total / n;
    layernorm_rows<<<row_grid(rows), SW_CUDA_THREADS, 0, c->stream>>>(
        (const float *)a->data, (const float *)gamma->data, (const float *)beta->data, eps,
        (float *)out->data, rows, n);
    return sw_cuda_check_launch(err, "layernorm");
}
