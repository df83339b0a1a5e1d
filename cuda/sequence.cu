/* The ops of pyannote's segmentation network on the GPU: leaky ReLU, abs,
 * max pooling, instance norm, log-softmax and LSTM layers. Shapes were checked
 * by ops.c; layouts are those of backend.h (time-major [B, T, C]). */
#include <math.h>

#include "cuda_internal.h"
#include "lstm_input_views.h"

__global__ void leaky_f32(const float *a, float *out, float alpha, int absolute, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = a[i];
        out[i] = absolute ? fabsf(v) : v >= 0.0f ? v : alpha * v;
    }
}

static sw_status map(sw_backend *be, const sw_tensor *a, float alpha, int absolute, sw_tensor *out,
                     sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(leaky_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (float *)out->data, alpha, absolute, n);
    return sw_cuda_check_launch(c, err, absolute ? "abs" : "leaky_relu");
}

sw_status sw_cuda_leaky_relu(sw_backend *be, const sw_tensor *a, float alpha, sw_tensor *out,
                             sw_error *err)
{
    return map(be, a, alpha, 0, out, err);
}

sw_status sw_cuda_abs(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    return map(be, a, 0.0f, 1, out, err);
}

/* ---- max pooling: one thread per output value ---- */

__global__ void max_pool_f32(const float *x, float *out, int64_t t_in, int64_t t_out, int64_t c,
                             int kernel, int stride, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t ch = o % c, t = (o / c) % t_out, b = o / (c * t_out);
        const float *src = x + (b * t_in + t * stride) * c + ch;
        float m = src[0];
        for (int k = 1; k < kernel; k++) {
            float v = src[(int64_t)k * c];
            m = v > m || v != v ? v : m; /* a NaN in the window wins, as on the CPU */
        }
        out[o] = m;
    }
}

sw_status sw_cuda_max_pool1d(sw_backend *be, const sw_tensor *x, int kernel, int stride,
                             sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(out);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(max_pool_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)x->data, (float *)out->data, x->shape[1], out->shape[1], x->shape[2], kernel,
     stride, n);
    return sw_cuda_check_launch(c, err, "max_pool1d");
}

/* ---- instance norm: one block per (batch, channel) ---- */

__device__ double block_sum(double v, double *shared)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            shared[threadIdx.x] += shared[threadIdx.x + w];
        __syncthreads();
    }
    double s = shared[0];
    __syncthreads(); /* the next call may overwrite shared[0] */
    return s;
}

/* Two passes in double, like the CPU: a window has 16,000 frames. */
__global__ void instance_norm_f32(const float *x, float *out, const float *gamma, const float *beta,
                                  int64_t t_len, int64_t c, float eps)
{
    SW_SHARED(double, shared, SW_CUDA_THREADS);
    int64_t b = blockIdx.x / c, ch = blockIdx.x % c;
    const float *src = x + b * t_len * c + ch;
    float *dst = out + b * t_len * c + ch;
    double s = 0.0;
    for (int64_t t = threadIdx.x; t < t_len; t += blockDim.x)
        s += src[t * c];
    double mean = block_sum(s, shared) / (double)t_len;
    double q = 0.0;
    for (int64_t t = threadIdx.x; t < t_len; t += blockDim.x) {
        double d = src[t * c] - mean;
        q += d * d;
    }
    double inv = 1.0 / sqrt(block_sum(q, shared) / (double)t_len + (double)eps);
    double g = gamma ? gamma[ch] : 1.0, bb = beta ? beta[ch] : 0.0;
    float scale = (float)(inv * g), shift = (float)(bb - mean * inv * g);
    for (int64_t t = threadIdx.x; t < t_len; t += blockDim.x)
        dst[t * c] = src[t * c] * scale + shift;
}

sw_status sw_cuda_instance_norm(sw_backend *be, const sw_tensor *x, const sw_tensor *gamma,
                                const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t blocks = x->shape[0] * x->shape[2];
    if (blocks == 0 || x->shape[1] == 0)
        return SW_OK;
    if (blocks > 2147483647)
        return sw_fail(err, SW_ERR_ARG, "cuda instance_norm: too many channels");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    SW_LAUNCH(instance_norm_f32, (unsigned)blocks, SW_CUDA_THREADS, 0, c->stream)
    ((const float *)x->data, (float *)out->data, gamma ? (const float *)gamma->data : NULL,
     beta ? (const float *)beta->data : NULL, x->shape[1], x->shape[2], eps);
    return sw_cuda_check_launch(c, err, "instance_norm");
}

/* ---- log-softmax: one thread per row (rows are class scores, a few wide) ---- */

__global__ void log_softmax_f32(const float *a, float *out, int64_t rows, int64_t len)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += step) {
        const float *x = a + r * len;
        float *y = out + r * len;
        float mx = -INFINITY;
        for (int64_t i = 0; i < len; i++)
            mx = x[i] > mx ? x[i] : mx;
        double sum = 0.0;
        for (int64_t i = 0; i < len; i++)
            sum += exp((double)x[i] - (double)mx);
        float lse = mx == -INFINITY ? 0.0f : mx + (float)log(sum);
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] - lse;
    }
}

sw_status sw_cuda_log_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t len = sw_cuda_last_dim(a);
    int64_t rows = len > 0 ? sw_cuda_numel(a) / len : 0;
    sw_status st;
    if (!sw_cuda_enter_work(c, rows, &st, err))
        return st;
    SW_LAUNCH(log_softmax_f32, sw_cuda_grid(c, rows, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
              c->stream)
    ((const float *)a->data, (float *)out->data, rows, len);
    return sw_cuda_check_launch(c, err, "log_softmax");
}

/* ---- LSTM ---- */

/* The input projections of all timesteps are one cuBLAS sgemm; the
 * recurrence is one block per (direction, batch item) that walks the whole
 * sequence, so there is no launch per timestep. Thread j owns gate row j
 * (4H threads), then the first H threads update the cell; h lives in shared
 * memory and c in a register.
 * 4H threads a block, up to 1024 (H = 256 for GE2E): without the bound
 * ptxas may give each thread more than the 64 registers a 1024-thread block
 * can have (it gave exactly 64 on sm_75), and the launch would fail with "too
 * many resources requested" on the GPU alone. */
__global__ void __launch_bounds__(1024)
    lstm_recurrence_f32(const float *gx, const float *w_hh, const float *bias, float *out,
                        float *state, int64_t batch, int64_t t_len, int64_t dirs, int64_t h)
{
    SW_DYNAMIC_SHARED(float, mem); /* h_prev [H], gates [4H] */
    float *hs = mem, *gates = mem + h;
    int64_t dir = blockIdx.x / batch, b = blockIdx.x % batch, g4 = 4 * h;
    int64_t j = threadIdx.x;
    const float *wj = w_hh + (dir * g4 + j) * h;
    /* state [2, D, B, H]: this block's h at blockIdx.x * h, its c D * B rows on */
    float *h0 = state ? state + blockIdx.x * h : NULL;
    float *c0 = state ? state + (dirs * batch + blockIdx.x) * h : NULL;
    float cell = 0.0f;
    if (j < h) {
        hs[j] = h0 ? h0[j] : 0.0f;
        cell = c0 ? c0[j] : 0.0f;
    }
    __syncthreads();
    for (int64_t s = 0; s < t_len; s++) {
        int64_t t = dir == 0 ? s : t_len - 1 - s;
        float acc = gx[(b * t_len + t) * dirs * g4 + dir * g4 + j] + bias[dir * g4 + j];
        for (int64_t k = 0; k < h; k++)
            acc += hs[k] * wj[k];
        gates[j] = acc;
        __syncthreads();
        if (j < h) {
            float ig = 1.0f / (1.0f + expf(-gates[j]));
            float fg = 1.0f / (1.0f + expf(-gates[h + j]));
            float cg = tanhf(gates[2 * h + j]);
            float og = 1.0f / (1.0f + expf(-gates[3 * h + j]));
            cell = fg * cell + ig * cg;
            float hv = og * tanhf(cell);
            hs[j] = hv;
            out[(b * t_len + t) * dirs * h + dir * h + j] = hv;
        }
        __syncthreads();
    }
    if (h0 && j < h) { /* the final state, for the next piece */
        h0[j] = hs[j];
        c0[j] = cell;
    }
}

sw_status sw_cuda_lstm(sw_backend *be, const sw_tensor *x, const sw_tensor *w_ih,
                       const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                       sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t b = x->shape[0], t = x->shape[1];
    int64_t d = w_ih->shape[0], h = w_hh->shape[2];
    if (b == 0 || t == 0)
        return SW_OK;
    if (4 * h > 1024)
        return sw_fail(err, SW_ERR_ARG, "cuda lstm: hidden size %lld above 256", (long long)h);
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    float *gx = (float *)be->alloc(be, (size_t)(b * t * d * 4 * h) * sizeof(float), err);
    if (!gx)
        return err->code;
    sw_tensor xm, wm, gm;
    sw_lstm_input_views(x, w_ih, h, gx, &xm, &wm, &gm);
    st = sw_cuda_matmul(be, &xm, &wm, &gm, 1, 1.0f, 0.0f, err);
    if (st == SW_OK) {
        size_t shared = (size_t)(5 * h) * sizeof(float);
        SW_LAUNCH(lstm_recurrence_f32, (unsigned)(d * b), (unsigned)(4 * h), shared, c->stream)
        (gx, (const float *)w_hh->data, (const float *)bias->data, (float *)out->data,
         state ? (float *)state->data : NULL, b, t, d, h);
        st = sw_cuda_check_launch(c, err, "lstm");
    }
    be->free(be, gx); /* stream order: the next user of the block runs after */
    return st;
}
