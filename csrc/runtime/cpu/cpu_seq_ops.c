#include "cpu_seq_ops.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_row_max.h"
#include "elementwise_math.h"
#include "lstm_input_views.h"
#include "cpu_dispatch.h"
#include "narrow_gemm.h"

/* ---- elementwise ---- */

typedef struct map_job {
    const float *a;
    float *out;
    float alpha;
    int abs_only;
} map_job;

static void map_range(void *ctx, size_t begin, size_t end)
{
    const map_job *j = ctx;
    const float *a = j->a; /* locals, not reads through j: the loops vectorise */
    uint32_t alpha_bits = sw_f32_bits(j->alpha);
    float *out = j->out;
    if (j->abs_only)
        for (size_t i = begin; i < end; i++)
            out[i] = fabsf(a[i]);
    else
        for (size_t i = begin; i < end; i++)
            out[i] = sw_leaky_relu_bits(a[i], alpha_bits);
}

sw_status sw_cpu_leaky_relu(sw_threadpool *tp, const sw_tensor *a, float alpha, sw_tensor *out)
{
    map_job j = {a->data, out->data, alpha, 0};
    sw_parallel_for(tp, (size_t)sw_tensor_numel(a), 16384, map_range, &j);
    return SW_OK;
}

sw_status sw_cpu_abs(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out)
{
    map_job j = {a->data, out->data, 0.0f, 1};
    sw_parallel_for(tp, (size_t)sw_tensor_numel(a), 16384, map_range, &j);
    return SW_OK;
}

/* ---- max pooling: one item per output frame ---- */

typedef struct pool_job {
    const float *x;
    float *out;
    int64_t t_in, t_out, c;
    int kernel, stride;
} pool_job;

static void pool_range(void *ctx, size_t begin, size_t end)
{
    const pool_job *j = ctx;
    for (size_t item = begin; item < end; item++) {
        int64_t b = (int64_t)item / j->t_out, t = (int64_t)item % j->t_out;
        const float *src = j->x + (b * j->t_in + t * j->stride) * j->c;
        float *dst = j->out + (int64_t)item * j->c;
        memcpy(dst, src, (size_t)j->c * sizeof(float));
        for (int k = 1; k < j->kernel; k++) {
            const float *row = src + k * j->c;
            /* NaN propagates as in PyTorch: a NaN in the window wins */
            for (int64_t ch = 0; ch < j->c; ch++)
                dst[ch] = row[ch] > dst[ch] || row[ch] != row[ch] ? row[ch] : dst[ch];
        }
    }
}

sw_status sw_cpu_max_pool1d(sw_threadpool *tp, const sw_tensor *x, int kernel, int stride,
                            sw_tensor *out)
{
    pool_job j = {x->data, out->data, x->shape[1], out->shape[1], x->shape[2], kernel, stride};
    sw_parallel_for(tp, (size_t)(out->shape[0] * out->shape[1]), 64, pool_range, &j);
    return SW_OK;
}

/* ---- instance norm: statistics of each (batch, channel) over time ---- */

typedef struct inorm_job {
    const float *x;
    float *out;
    const float *gamma, *beta;
    int64_t t, c, c_block;
    float eps;
} inorm_job;

/* Items are (batch, block of channels); each reads its block row by row, so
 * the time-major layout is walked forwards. Sums in double: a 10 s window has
 * 16,000 frames and the mean is subtracted before squaring (two passes). */
#define INORM_BLOCK 16

static void inorm_range(void *ctx, size_t begin, size_t end)
{
    const inorm_job *j = ctx;
    int64_t blocks = (j->c + j->c_block - 1) / j->c_block;
    for (size_t item = begin; item < end; item++) {
        int64_t b = (int64_t)item / blocks, c0 = ((int64_t)item % blocks) * j->c_block;
        int64_t n = j->c - c0 < j->c_block ? j->c - c0 : j->c_block;
        const float *x = j->x + b * j->t * j->c + c0;
        float *y = j->out + b * j->t * j->c + c0;
        double mean[INORM_BLOCK] = {0}, var[INORM_BLOCK] = {0};
        for (int64_t t = 0; t < j->t; t++)
            for (int64_t k = 0; k < n; k++)
                mean[k] += x[t * j->c + k];
        for (int64_t k = 0; k < n; k++)
            mean[k] /= (double)j->t;
        for (int64_t t = 0; t < j->t; t++)
            for (int64_t k = 0; k < n; k++) {
                double dv = x[t * j->c + k] - mean[k];
                var[k] += dv * dv;
            }
        float scale[INORM_BLOCK], shift[INORM_BLOCK];
        for (int64_t k = 0; k < n; k++) {
            double inv = 1.0 / sqrt(var[k] / (double)j->t + (double)j->eps);
            double g = j->gamma ? j->gamma[c0 + k] : 1.0, bb = j->beta ? j->beta[c0 + k] : 0.0;
            scale[k] = (float)(inv * g);
            shift[k] = (float)(bb - mean[k] * inv * g);
        }
        for (int64_t t = 0; t < j->t; t++)
            for (int64_t k = 0; k < n; k++)
                y[t * j->c + k] = x[t * j->c + k] * scale[k] + shift[k];
    }
}

sw_status sw_cpu_instance_norm(sw_threadpool *tp, const sw_tensor *x, const sw_tensor *gamma,
                               const sw_tensor *beta, float eps, sw_tensor *out)
{
    int64_t c = x->shape[2];
    inorm_job j = {x->data,
                   out->data,
                   gamma ? gamma->data : NULL,
                   beta ? beta->data : NULL,
                   x->shape[1],
                   c,
                   INORM_BLOCK,
                   eps};
    int64_t blocks = (c + INORM_BLOCK - 1) / INORM_BLOCK;
    sw_parallel_for(tp, (size_t)(x->shape[0] * blocks), 1, inorm_range, &j);
    return SW_OK;
}

/* ---- log-softmax over rows ---- */

typedef struct lsm_job {
    const float *a;
    float *out;
    size_t len;
} lsm_job;

/* log(sum(exp(x))) of a row, summed in double about its max */
static float row_log_sum_exp(const float *x, size_t len)
{
    float mx = sw_cpu_row_max(x, len);
    double sum = 0.0;
    for (size_t i = 0; i < len; i++)
        sum += exp((double)x[i] - (double)mx);
    /* a row of -inf stays -inf rather than becoming NaN */
    return mx == -INFINITY ? 0.0f : mx + (float)log(sum);
}

static void lsm_range(void *ctx, size_t begin, size_t end)
{
    const lsm_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *x = j->a + r * j->len;
        float *y = j->out + r * j->len;
        float lse = row_log_sum_exp(x, j->len);
        for (size_t i = 0; i < j->len; i++)
            y[i] = x[i] - lse;
    }
}

sw_status sw_cpu_log_softmax(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out)
{
    lsm_job j = {a->data, out->data, (size_t)sw_row_len(a)};
    sw_parallel_for(tp, (size_t)sw_rows(a), 64, lsm_range, &j);
    return SW_OK;
}

/* ---- LSTM ---- */

/* The input projection of every timestep is one sgemm, gx = x w_ih^T for
 * both directions at once; the recurrence then adds h_{t-1} w_hh^T step by
 * step. Items of the parallel loop are (direction, group of batch rows): a
 * group shares each read of w_hh, and groups are sized so that there are at
 * least as many items as threads. */
typedef struct lstm_job {
    float *gx;                  /* [B, T, D * 4H]: projections, overwritten by the gates */
    const float *w_hh_t, *bias; /* w_hh_t [D, H, 4H]: w_hh transposed */
    float *out;                 /* [B, T, D * H] */
    float *cell;                /* [D, B, H] */
    float *state;               /* NULL, or [2, D, B, H]: h, c in, then out */
    int64_t b, t, d, h, rows;
} lstm_job;

/* exp without calls or branches, so that the gate loop vectorises (libm's
 * expf is a call per element, and five of them per cell and step dominated
 * the layer): Cephes' polynomial, within 2 ulp of expf. The argument is
 * clamped to [-87, 88], where the result is still a normal float. */
static inline float lstm_expf(float x)
{
    /* The clamp on the bits (an unsigned minimum per sign, as
     * sw_expf_nonpositive): float comparisons kept GCC from vectorising the
     * gate loop for AVX2 (it did for AVX-512 only). Same values for every
     * non-NaN x. */
    uint32_t b, neg = 0xc2ae0000u /* -87 */, pos = 0x42b00000u /* 88 */;
    memcpy(&b, &x, sizeof b);
    b = b >> 31 ? (b > neg ? neg : b) : (b > pos ? pos : b);
    memcpy(&x, &b, sizeof x);
    return sw_expf_in_range(x);
}

static inline float sigmoidf(float v)
{
    return 1.0f / (1.0f + lstm_expf(-v));
}

/* 1 - 2 / (1 + e^2v): exact at both ends, absolute error ~1e-7 near 0 */
static inline float tanh_f(float v)
{
    return 1.0f - 2.0f / (1.0f + lstm_expf(2.0f * v));
}

/* g[r, :] += h[r, :] w_hh^T with w_hh given transposed (wt [H, 4H]): axpy
 * form, so the inner loop runs along contiguous gate columns and vectorises
 * without horizontal sums, and blocks of 4 rows x 32 columns stay in
 * registers across the whole k loop. Each row's sum runs over k in order,
 * whatever the grouping, so a batch gives the same bits as one item. */
#define REC_ROWS 4
#define REC_COLS 32
/* the most batch rows one item of the pool steps through together */
#define LSTM_MAX_GROUP 16

/* always inlined: it must be compiled into lstm_range's AVX2 clone */
static inline __attribute__((always_inline)) void recurrent_product(int64_t rows, int64_t n,
                                                                    int64_t k, const float *h,
                                                                    int64_t ld_h, const float *wt,
                                                                    float *g, int64_t ld_g)
{
    if (rows <= LSTM_MAX_GROUP && sw_narrow_gemm_ok(n)) {
        /* narrow_gemm.c: 8 x 32 AVX-512 tiles (6 x 16 at AVX2), from g's
         * values, fused multiply-adds in k order: the same bits at both
         * levels; the loop below (no FMA) may differ in the last bit */
        const float *p[LSTM_MAX_GROUP];
        for (int64_t r = 0; r < rows; r++)
            p[r] = h + r * ld_h;
        sw_narrow_gemm_rows(rows, n, 1, k, p, wt, g, ld_g, 1);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += REC_COLS) {
        for (int64_t r0 = 0; r0 < rows; r0 += REC_ROWS) {
            int64_t nr = rows - r0 < REC_ROWS ? rows - r0 : REC_ROWS;
            if (nr == REC_ROWS && j0 + REC_COLS <= n) {
                float acc[REC_ROWS][REC_COLS];
                for (int r = 0; r < REC_ROWS; r++)
                    for (int j = 0; j < REC_COLS; j++)
                        acc[r][j] = g[(r0 + r) * ld_g + j0 + j];
                for (int64_t kk = 0; kk < k; kk++) {
                    const float *w = wt + kk * n + j0;
                    for (int r = 0; r < REC_ROWS; r++) {
                        float hv = h[(r0 + r) * ld_h + kk];
                        for (int j = 0; j < REC_COLS; j++)
                            acc[r][j] += hv * w[j];
                    }
                }
                for (int r = 0; r < REC_ROWS; r++)
                    for (int j = 0; j < REC_COLS; j++)
                        g[(r0 + r) * ld_g + j0 + j] = acc[r][j];
            } else {
                int64_t nc = n - j0 < REC_COLS ? n - j0 : REC_COLS;
                for (int64_t r = 0; r < nr; r++)
                    for (int64_t kk = 0; kk < k; kk++) {
                        float hv = h[(r0 + r) * ld_h + kk];
                        for (int64_t j = 0; j < nc; j++)
                            g[(r0 + r) * ld_g + j0 + j] += hv * wt[kk * n + j0 + j];
                    }
            }
        }
    }
}

/* One row's gates -> its cell and output. The pointers never alias
 * (restrict), which lets the compiler run the loop 8 or 16 lanes wide; each
 * lane does the scalar loop's operations in its order (no contraction), so
 * the bits are the same. */
SW_ALWAYS_INLINE void lstm_cell(int64_t h, const float *restrict g, const float *restrict bias,
                                float *restrict c, float *restrict out)
{
    for (int64_t k = 0; k < h; k++) {
        float ig = sigmoidf(g[k] + bias[k]);
        float fg = sigmoidf(g[h + k] + bias[h + k]);
        float cg = tanh_f(g[2 * h + k] + bias[2 * h + k]);
        float og = sigmoidf(g[3 * h + k] + bias[3 * h + k]);
        float ck = fg * c[k] + ig * cg;
        c[k] = ck;
        out[k] = og * tanh_f(ck);
    }
}

SW_ALWAYS_INLINE void lstm_range_body(void *ctx, size_t begin, size_t end)
{
    const lstm_job *j = ctx;
    int64_t groups = (j->b + j->rows - 1) / j->rows, h = j->h, g4 = 4 * h;
    int64_t ld_g = j->t * j->d * g4, ld_h = j->t * j->d * h;
    for (size_t item = begin; item < end; item++) {
        int64_t dir = (int64_t)item / groups, b0 = ((int64_t)item % groups) * j->rows;
        int64_t rows = j->b - b0 < j->rows ? j->b - b0 : j->rows;
        const float *whh = j->w_hh_t + dir * g4 * h, *bias = j->bias + dir * g4;
        float *cell = j->cell + (dir * j->b + b0) * h;
        /* this item's rows of the carried h and c (same layout as cell) */
        float *h0 = j->state ? j->state + (dir * j->b + b0) * h : NULL;
        float *c0 = j->state ? j->state + (j->d * j->b + dir * j->b + b0) * h : NULL;
        if (c0)
            memcpy(cell, c0, (size_t)(rows * h) * sizeof(float));
        else
            memset(cell, 0, (size_t)(rows * h) * sizeof(float));
        for (int64_t s = 0; s < j->t; s++) {
            int64_t t = dir == 0 ? s : j->t - 1 - s, prev = dir == 0 ? t - 1 : t + 1;
            float *g = j->gx + (b0 * j->t + t) * j->d * g4 + dir * g4;
            float *hout = j->out + (b0 * j->t + t) * j->d * h + dir * h;
            if (s > 0)
                recurrent_product(rows, g4, h, j->out + (b0 * j->t + prev) * j->d * h + dir * h,
                                  ld_h, whh, g, ld_g);
            else if (h0) /* the carried h; without one, h_{-1} is zero */
                recurrent_product(rows, g4, h, h0, h, whh, g, ld_g);
            for (int64_t r = 0; r < rows; r++)
                lstm_cell(h, g + r * ld_g, bias, cell + r * h, hout + r * ld_h);
        }
        if (h0) { /* the state after the last step, for the next piece */
            int64_t last = dir == 0 ? j->t - 1 : 0;
            for (int64_t r = 0; r < rows; r++)
                memcpy(h0 + r * h, j->out + ((b0 + r) * j->t + last) * j->d * h + dir * h,
                       (size_t)h * sizeof(float));
            memcpy(c0, cell, (size_t)(rows * h) * sizeof(float));
        }
    }
}

SW_VOID_MULTIVERSION(static, lstm_range, (void *ctx, size_t begin, size_t end), (ctx, begin, end))

sw_status sw_cpu_lstm(sw_backend *be, sw_threadpool *tp, const sw_tensor *x, const sw_tensor *w_ih,
                      const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                      sw_tensor *out, sw_error *err)
{
    int64_t b = x->shape[0], t = x->shape[1];
    int64_t d = w_ih->shape[0], h = w_hh->shape[2];
    if (b == 0 || t == 0)
        return SW_OK;
    size_t gx_bytes = (size_t)(b * t * d * 4 * h) * sizeof(float);
    float *gx = be->alloc(be, gx_bytes, err);
    float *cell = gx ? be->alloc(be, (size_t)(d * b * h) * sizeof(float), err) : NULL;
    float *wt = cell ? be->alloc(be, (size_t)(d * 4 * h * h) * sizeof(float), err) : NULL;
    if (!wt) {
        if (cell)
            be->free(be, cell);
        if (gx)
            be->free(be, gx);
        return err->code;
    }
    const float *whh = w_hh->data;
    for (int64_t dir = 0; dir < d; dir++)
        for (int64_t row = 0; row < 4 * h; row++)
            for (int64_t k = 0; k < h; k++)
                wt[(dir * h + k) * 4 * h + row] = whh[(dir * 4 * h + row) * h + k];
    sw_tensor xm, wm, gm;
    sw_lstm_input_views(x, w_ih, h, gx, &xm, &wm, &gm);
    sw_status st = be->matmul(be, &xm, &wm, &gm, 1, 1.0f, 0.0f, err);
    if (st == SW_OK) {
        /* as many rows per group as keeps every thread busy, up to 16 */
        int64_t rows = b * d / sw_threadpool_size(tp);
        rows = rows < 1 ? 1 : rows > LSTM_MAX_GROUP ? LSTM_MAX_GROUP : rows;
        lstm_job j = {gx, wt, bias->data, out->data, cell, state ? state->data : NULL,
                      b,  t,  d,          h,         rows};
        int64_t items = d * ((b + rows - 1) / rows);
        sw_parallel_for(tp, (size_t)items, 1, lstm_range, &j);
    }
    be->free(be, wt);
    be->free(be, cell);
    be->free(be, gx);
    return st;
}
