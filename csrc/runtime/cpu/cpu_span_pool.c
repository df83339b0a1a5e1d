#include "cpu_span_pool.h"

#include <math.h>

#include "cpu_workers.h"

typedef struct span_job {
    const float *span, *scale, *shift;
    const int64_t *first;
    float *y;
    int64_t t_out, c;
    int pool;
} span_job;

/* rows (window, pooled frame) [begin, end) */
static void span_rows(void *ctx, size_t begin, size_t end)
{
    const span_job *j = ctx;
    for (size_t item = begin; item < end; item++) {
        int64_t b = (int64_t)item / j->t_out, t = (int64_t)item % j->t_out;
        const float *src = j->span + (j->first[b] + t * j->pool) * j->c;
        const float *restrict shift = j->shift + b * j->c;
        float *restrict dst = j->y + (int64_t)item * j->c;
        const float scale = j->scale[b];
        for (int64_t ch = 0; ch < j->c; ch++) {
            /* rounded after the product and after the sum, as the two ops */
            float v = src[ch] * scale;
            v = v + shift[ch];
            dst[ch] = fabsf(v);
        }
        for (int k = 1; k < j->pool; k++) {
            const float *restrict row = src + k * j->c;
            for (int64_t ch = 0; ch < j->c; ch++) {
                float v = row[ch] * scale;
                v = fabsf(v + shift[ch]);
                dst[ch] = v > dst[ch] || v != v ? v : dst[ch];
            }
        }
    }
}

sw_status sw_cpu_span_abs_pool(const sw_tensor *span, const int64_t *first, const float *scale,
                               const float *shift, int pool, sw_tensor *y, sw_error *err)
{
    sw_backend *be = span->backend;
    if (be->kind != SW_DEVICE_CPU || y->ndim != 3 || pool < 1 || y->shape[2] != sw_row_len(span))
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_span_abs_pool: a CPU span and y [B, T, C] needed");
    int64_t batch = y->shape[0], t_out = y->shape[1], c = y->shape[2], rows = sw_rows(span);
    for (int64_t b = 0; b < batch; b++)
        if (first[b] < 0 || first[b] + t_out * pool > rows)
            return sw_fail(err, SW_ERR_ARG, "sw_cpu_span_abs_pool: window %lld leaves the span",
                           (long long)b);
    span_job j = {span->data, scale, shift, first, y->data, t_out, c, pool};
    sw_cpu_backend_parallel_for(be, (size_t)(batch * t_out), 64, span_rows, &j);
    return SW_OK;
}
