#include "cpu_affine_relu.h"

#include <string.h>

#include "cpu_workers.h"
#include "elementwise_math.h"

typedef struct affine_job {
    const float *src, *scale, *shift;
    float *dst;
    int64_t ld, c;
} affine_job;

static void affine_rows(void *ctx, size_t begin, size_t end)
{
    const affine_job *j = ctx;
    const float *restrict scale = j->scale, *restrict shift = j->shift;
    for (size_t r = begin; r < end; r++) {
        const float *restrict s = j->src + (int64_t)r * j->ld;
        float *restrict d = j->dst + (int64_t)r * j->c;
        for (int64_t k = 0; k < j->c; k++) {
            /* rounded after the product and after the sum, as two ops would */
            float v = s[k] * scale[k];
            v = v + shift[k];
            d[k] = sw_leaky_relu_bits(v, 0u);
        }
    }
}

sw_status sw_cpu_affine_relu_rows(sw_backend *be, const float *src, int64_t ld, int64_t n,
                                  int64_t c, const float *scale, const float *shift, float *dst,
                                  sw_error *err)
{
    if (be->kind != SW_DEVICE_CPU)
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_affine_relu_rows: not a CPU backend");
    affine_job j = {src, scale, shift, dst, ld, c};
    size_t min_rows = c > 0 && c < 16384 ? (size_t)(16384 / c) : 1;
    sw_cpu_backend_parallel_for(be, (size_t)n, min_rows, affine_rows, &j);
    return SW_OK;
}
