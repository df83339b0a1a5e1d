#include "cpu_pool_ops.h"

#include <math.h>

/* ---- statistics pooling: one work item per (pool, group) ---- */

#define STATS_BLOCK 64 /* channels summed side by side, in double on the stack */

typedef struct stats_job {
    const float *x, *w;
    float *out;
    int64_t m, g, t, c;
    double eps;
} stats_job;

/* Every sum runs over t in increasing order, as the CUDA kernel's threads do. */
static void stats_range(void *ctx, size_t begin, size_t end)
{
    const stats_job *j = ctx;
    for (size_t u = begin; u < end; u++) {
        int64_t item = (int64_t)u / j->g, g = (int64_t)u % j->g, b = item / j->m;
        const float *w = j->w ? j->w + item * j->t : NULL;
        const float *x = j->x + (b * j->g + g) * j->t * j->c;
        float *mean_out = j->out + item * 2 * j->c * j->g, *std_out = mean_out + j->c * j->g;
        double v1 = 0.0, v2 = 0.0;
        for (int64_t t = 0; t < j->t; t++) {
            double wt = w ? w[t] : 1.0;
            v1 += wt;
            v2 += wt * wt;
        }
        double denom = v1 - v2 / v1;
        for (int64_t k0 = 0; k0 < j->c; k0 += STATS_BLOCK) {
            int64_t n = j->c - k0 < STATS_BLOCK ? j->c - k0 : STATS_BLOCK;
            double mean[STATS_BLOCK] = {0}, sq[STATS_BLOCK] = {0};
            for (int64_t t = 0; t < j->t; t++) {
                double wt = w ? w[t] : 1.0;
                for (int64_t k = 0; k < n; k++)
                    mean[k] += wt * x[t * j->c + k0 + k];
            }
            for (int64_t k = 0; k < n; k++)
                mean[k] /= v1;
            for (int64_t t = 0; t < j->t; t++) {
                double wt = w ? w[t] : 1.0;
                for (int64_t k = 0; k < n; k++) {
                    double d = x[t * j->c + k0 + k] - mean[k];
                    sq[k] += wt * d * d;
                }
            }
            for (int64_t k = 0; k < n; k++) {
                mean_out[(k0 + k) * j->g + g] = (float)mean[k];
                std_out[(k0 + k) * j->g + g] = (float)sqrt(sq[k] / denom + j->eps);
            }
        }
    }
}

void sw_cpu_stats_pool(sw_threadpool *tp, const sw_tensor *x, const sw_tensor *w, double eps,
                       sw_tensor *out)
{
    int four = x->ndim == 4;
    stats_job j = {x->data,
                   w ? w->data : NULL,
                   out->data,
                   w ? w->shape[1] : 1,
                   four ? x->shape[1] : 1,
                   x->shape[x->ndim - 2],
                   x->shape[x->ndim - 1],
                   eps};
    sw_parallel_for(tp, (size_t)(out->shape[0] * j.g), 1, stats_range, &j);
}

/* ---- magnitudes: |re + i im| per bin, rows of K re then K im ---- */

typedef struct mag_job {
    const float *a;
    float *out;
    int64_t k;
} mag_job;

static void mag_range(void *ctx, size_t begin, size_t end)
{
    const mag_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *re = j->a + (int64_t)r * 2 * j->k, *im = re + j->k;
        float *y = j->out + (int64_t)r * j->k;
        for (int64_t i = 0; i < j->k; i++)
            y[i] = sqrtf(re[i] * re[i] + im[i] * im[i]);
    }
}

void sw_cpu_magnitude(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out)
{
    mag_job j = {a->data, out->data, sw_row_len(out)};
    sw_parallel_for(tp, (size_t)sw_rows(out), 64, mag_range, &j);
}

/* ---- L2 normalisation of rows ---- */

typedef struct l2_job {
    const float *a;
    float *out;
    int64_t len;
    double eps;
} l2_job;

static void l2_range(void *ctx, size_t begin, size_t end)
{
    const l2_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *x = j->a + (int64_t)r * j->len;
        float *y = j->out + (int64_t)r * j->len;
        double norm = 0.0;
        for (int64_t i = 0; i < j->len; i++)
            norm += (double)x[i] * x[i];
        float scale = (float)(1.0 / fmax(sqrt(norm), j->eps));
        for (int64_t i = 0; i < j->len; i++)
            y[i] = x[i] * scale;
    }
}

void sw_cpu_l2_normalize(sw_threadpool *tp, const sw_tensor *a, float eps, sw_tensor *out)
{
    l2_job j = {a->data, out->data, sw_row_len(a), (double)eps};
    sw_parallel_for(tp, (size_t)sw_rows(a), 16, l2_range, &j);
}
