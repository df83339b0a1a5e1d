#include "q8_quantize.h"

#include "cpu_dispatch.h"
#include "widen.h"

#include <math.h>

/* Round half to even for |v| < 2^22 without a libm call, so the loop
 * vectorises: adding and taking away 1.5 * 2^23 leaves the float's own
 * rounding (the default mode, which nearbyintf would also use) to do it.
 * Without -ffast-math the compiler may not fold the two away. */
static inline float round_even(float v)
{
    const float big = 12582912.0f;
    return (v + big) - big;
}

/* Per row: the largest magnitude in eight running maxima (one chain was a
 * compare's latency per value), then the values scaled, rounded and clamped
 * as integers; both loops vectorise, at each CPU level. The maximum is exact
 * in any order and the rest is element-wise, so every level gives the same
 * bytes. */
SW_ALWAYS_INLINE void sw_q8_quantize_rows_body(const float *x, int m, int k, int ldx, int8_t *q,
                                               float *scale)
{
    for (int r = 0; r < m; r++) {
        const float *xr = x + (long)r * ldx;
        float m8[8] = {0.0f};
        int i = 0;
        for (; i + 8 <= k; i += 8)
            for (int l = 0; l < 8; l++) {
                float a = fabsf(xr[i + l]);
                m8[l] = a > m8[l] ? a : m8[l];
            }
        float amax = 0.0f;
        for (; i < k; i++) {
            float a = fabsf(xr[i]);
            amax = a > amax ? a : amax;
        }
        for (int l = 0; l < 8; l++)
            amax = m8[l] > amax ? m8[l] : amax;
        float s = amax > 0.0f ? 127.0f / amax : 1.0f;
        int8_t *qr = q + (long)r * k;
        for (i = 0; i < k; i++) {
            int32_t v = (int32_t)round_even(xr[i] * s); /* |v| <= 128: exact */
            v = v > 127 ? 127 : v;
            qr[i] = (int8_t)(v < -127 ? -127 : v);
        }
        scale[r] = s;
    }
}

SW_VOID_MULTIVERSION(, sw_q8_quantize_rows,
                     (const float *x, int m, int k, int ldx, int8_t *q, float *scale),
                     (x, m, k, ldx, q, scale))

void sw_q8_row_sums(const int8_t *q, int n, int k, int32_t *sums)
{
    for (int j = 0; j < n; j++) {
        int32_t s = 0;
        for (int i = 0; i < k; i++)
            s += q[(long)j * k + i];
        sums[j] = s;
    }
}

void sw_q8_quantize_matrix_rows(const void *src, sw_dtype dtype, int64_t cols, size_t r0, size_t r1,
                                float *row, int8_t *q, float *scale, int32_t *sums)
{
    size_t row_bytes = (size_t)cols * sw_dtype_size(dtype);
    const unsigned char *bytes = src;
    for (size_t r = r0; r < r1; r++) {
        sw_widen_to_f32(bytes + r * row_bytes, dtype, row, (size_t)cols);
        sw_q8_quantize_rows(row, 1, (int)cols, (int)cols, q + (r - r0) * (size_t)cols, scale + r);
    }
    sw_q8_row_sums(q, (int)(r1 - r0), (int)cols, sums + r0);
}
