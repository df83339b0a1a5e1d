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
    SW_SHARED(float, scratch, WARP);
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
    SW_SHARED(float, scratch, WARP);
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
    sw_status st;
    if (!sw_cuda_enter_work(c, total, &st, err))
        return st;
    int64_t rows = total / n;
    SW_LAUNCH(softmax_rows, row_grid(rows), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (float *)out->data, rows, n);
    return sw_cuda_check_launch(c, err, "softmax");
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
    sw_status st;
    if (!sw_cuda_enter_work(c, total, &st, err))
        return st;
    int64_t rows = total / n;
    SW_LAUNCH(layernorm_rows, row_grid(rows), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (const float *)gamma->data, (const float *)beta->data, eps,
     (float *)out->data, rows, n);
    return sw_cuda_check_launch(c, err, "layernorm");
}

/* ---- attention: one block per (batch, head, query row) ----
 * The row's scores sit in shared memory (kv_len floats: 1500 for Whisper's
 * cross-attention), then the block does the softmax and the weighted sum of
 * values. Plain, and the same arithmetic order as the CPU's fused path.
 * Many query rows without their weights go to attention.cu's tiles instead
 * (sw_cuda_attention_tiled_fits says which). */
__global__ void attention_rows(const float *q, const float *k, const float *v, float *out,
                               float *probs, int64_t tq, int64_t d, int64_t dh, int64_t tkv,
                               int64_t group, int64_t kv_len, int64_t causal, int heads,
                               float scale, int64_t items, const int32_t *length)
{
    SW_DYNAMIC_SHARED(float, sm);
    SW_SHARED(float, scratch, WARP);
    float *qs = sm, *s = sm + dh;
    sw_cuda_device_length(length, tkv, &kv_len, &causal);
    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
        int64_t i = item % tq, h = (item / tq) % heads, b = item / (tq * heads);
        const float *qi = q + (b * tq + i) * d + h * dh;
        const float *kb = k + (b / group) * tkv * d + h * dh;
        const float *vb = v + (b / group) * tkv * d + h * dh;
        int64_t n = kv_len;
        if (causal >= 0 && causal + i + 1 < n)
            n = causal + i + 1;
        __syncthreads(); /* the previous item may still read qs and s */
        for (int64_t c = threadIdx.x; c < dh; c += blockDim.x)
            qs[c] = qi[c];
        __syncthreads();
        float m = -INFINITY;
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
            const float *kt = kb + t * d;
            float acc = 0.0f;
            for (int64_t c = 0; c < dh; c++)
                acc += qs[c] * kt[c];
            s[t] = acc * scale;
            m = fmaxf(m, s[t]);
        }
        m = block_reduce(m, scratch, 1);
        float sum = 0.0f;
        for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
            s[t] = m == -INFINITY ? 0.0f : expf(s[t] - m);
            sum += s[t];
        }
        sum = block_reduce(sum, scratch, 0);
        float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        float *pr = probs ? probs + item * kv_len : NULL;
        for (int64_t t = threadIdx.x; t < kv_len; t += blockDim.x) {
            float p = t < n ? s[t] * inv : 0.0f;
            s[t] = p;
            if (pr)
                pr[t] = p;
        }
        __syncthreads();
        float *o = out + (b * tq + i) * d + h * dh;
        for (int64_t c = threadIdx.x; c < dh; c += blockDim.x) {
            float acc = 0.0f;
            for (int64_t t = 0; t < n; t++)
                acc += s[t] * vb[t * d + c];
            o[c] = acc;
        }
    }
}

sw_status sw_cuda_attention(sw_backend *be, const sw_tensor *q, const sw_tensor *k,
                            const sw_tensor *v, const sw_attention_params *p, sw_tensor *out,
                            sw_tensor *probs, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (q->ndim != 3 || k->ndim != 3 || v->ndim != 3 || q->dtype != SW_F32 || k->dtype != SW_F32 ||
        v->dtype != SW_F32 || out->dtype != SW_F32 || p->n_heads < 1 || k->shape[0] < 1)
        return sw_fail(err, SW_ERR_ARG, "cuda attention: f32 q, k, v of three dimensions");
    int64_t b = q->shape[0], tq = q->shape[1], d = q->shape[2], dh = d / p->n_heads;
    int64_t items = b * p->n_heads * tq;
    if (items > 0 && sw_cuda_attention_tiled_fits(tq, dh, probs != NULL)) {
        sw_status st = sw_cuda_enter(c, err);
        if (st != SW_OK)
            return st;
        return sw_cuda_attention_tiled(c, (const float *)q->data, (const float *)k->data,
                                       (const float *)v->data, (float *)out->data, b, tq, d, dh,
                                       k->shape[1], b / k->shape[0], p, err);
    }
    /* a device length is known only when the kernel runs: room for every key */
    int64_t room = p->length ? k->shape[1] : p->kv_len;
    size_t shared = (size_t)(dh + room) * sizeof(float);
    /* a block's 48 KiB hold the dynamic part and the kernel's static scratch */
    if (shared + WARP * sizeof(float) > 48 * 1024)
        return sw_fail(err, SW_ERR_ARG, "cuda attention: %lld keys do not fit the kernel's 48 KiB",
                       (long long)room);
    sw_status st;
    if (!sw_cuda_enter_work(c, items, &st, err))
        return st;
    SW_LAUNCH(attention_rows, row_grid(items), 128, shared, c->stream)
    ((const float *)q->data, (const float *)k->data, (const float *)v->data, (float *)out->data,
     probs ? (float *)probs->data : NULL, tq, d, dh, k->shape[1], b / k->shape[0], p->kv_len,
     p->causal_offset, p->n_heads, p->scale, items, p->length);
    return sw_cuda_check_launch(c, err, "attention");
}
