#include "small_gemm.h"

#include "cpu_dispatch.h"

#include <string.h>

#define LANES 16

SW_ALWAYS_INLINE float dot16(const float *x, const float *y, int k)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= k; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += x[i + l] * y[i + l];
    for (int l = 0; i < k; i++, l++)
        acc[l] += x[i] * y[i];
    /* pairwise, so the order does not depend on how lanes map to registers */
    for (int width = LANES / 2; width > 0; width /= 2)
        for (int l = 0; l < width; l++)
            acc[l] += acc[l + width];
    return acc[0];
}

/* A GCC vector of dot16's sixteen lanes: one register on AVX-512, two on
 * AVX2, four on the baseline; lane l sums the same terms in the same order
 * as dot16's acc[l]. */
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
#define LOAD16(p) (*(const v16u *)(const void *)(p))
#define ROWS      8

/* dot16 of ROWS rows of x against one weight row: ROWS independent chains
 * where dot16 has one, each bit for bit dot16's result. */
SW_ALWAYS_INLINE void dot16_rows(const float *const *x, const float *y, int k, float *out)
{
    v16 acc[ROWS];
    for (int r = 0; r < ROWS; r++)
        acc[r] = (v16){0.0f};
    int i = 0;
    for (; i + LANES <= k; i += LANES) {
        v16 yv = LOAD16(y + i);
        for (int r = 0; r < ROWS; r++)
            acc[r] += LOAD16(x[r] + i) * yv;
    }
    for (int r = 0; r < ROWS; r++) {
        float lanes[LANES];
        memcpy(lanes, &acc[r], sizeof lanes);
        for (int t = i, l = 0; t < k; t++, l++)
            lanes[l] += x[r][t] * y[t];
        for (int width = LANES / 2; width > 0; width /= 2)
            for (int l = 0; l < width; l++)
                lanes[l] += lanes[l + width];
        out[r] = lanes[0];
    }
}

/* Rows go in blocks of ROWS (a short last block repeats its last row and
 * drops the extra results); each weight row streams from memory once and
 * serves every block from L1, and the sums of a block run side by side. */
SW_ALWAYS_INLINE void sw_small_gemm_nt_body(int m, int n0, int n1, int k, float alpha,
                                            const float *a, int lda, const float *w, int ldw,
                                            float beta, float *c, int ldc)
{
    const float *rows[SW_SMALL_GEMM_MAX_ROWS + ROWS];
    for (int u = 0; u < m + ROWS; u++)
        rows[u] = a + (long)(u < m ? u : m - 1) * lda;
    for (int j = n0; j < n1; j++) {
        const float *wj = w + (long)j * ldw;
        for (int r0 = 0; r0 < m; r0 += ROWS) {
            float d[ROWS];
            dot16_rows(rows + r0, wj, k, d);
            int nr = m - r0 < ROWS ? m - r0 : ROWS;
            for (int u = 0; u < nr; u++) {
                float *cr = c + (long)(r0 + u) * ldc + j;
                float v = alpha * d[u];
                *cr = beta == 0.0f ? v : v + beta * *cr;
            }
        }
    }
}

SW_VOID_MULTIVERSION(, sw_small_gemm_nt,
                     (int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                      const float *w, int ldw, float beta, float *c, int ldc),
                     (m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc))

SW_ALWAYS_INLINE void dot_into_body(const float *x, const float *y, int k, float *out)
{
    *out = dot16(x, y, k);
}

SW_VOID_MULTIVERSION(static, dot_into, (const float *x, const float *y, int k, float *out),
                     (x, y, k, out))

float sw_dot(const float *x, const float *y, int k)
{
    float d;
    dot_into(x, y, k, &d);
    return d;
}
