#include "small_gemm.h"

#define LANES 16

static inline float dot16(const float *x, const float *y, int k)
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

SW_CLONES void sw_small_gemm_nt(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                                const float *w, int ldw, float beta, float *c, int ldc)
{
    for (int j = n0; j < n1; j++) {
        const float *wj = w + (long)j * ldw;
        for (int r = 0; r < m; r++) {
            float *cr = c + (long)r * ldc + j;
            float v = alpha * dot16(a + (long)r * lda, wj, k);
            *cr = beta == 0.0f ? v : v + beta * *cr;
        }
    }
}

SW_CLONES float sw_dot(const float *x, const float *y, int k)
{
    return dot16(x, y, k);
}
