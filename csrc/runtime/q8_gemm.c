#include "q8_gemm.h"

#include "cpu_dispatch.h"

#include <math.h>
#include <stdlib.h>

/* Round half to even for |v| < 2^22 without a libm call, so the loop
 * vectorises: adding and taking away 1.5 * 2^23 leaves the float's own
 * rounding (the default mode, which nearbyintf would also use) to do it.
 * Without -ffast-math the compiler may not fold the two away. */
static inline float round_even(float v)
{
    const float big = 12582912.0f;
    return (v + big) - big;
}

void sw_q8_quantize_rows(const float *x, int m, int k, int ldx, int8_t *q, float *scale)
{
    for (int r = 0; r < m; r++) {
        const float *xr = x + (long)r * ldx;
        float amax = 0.0f;
        for (int i = 0; i < k; i++) {
            float a = fabsf(xr[i]);
            amax = a > amax ? a : amax;
        }
        float s = amax > 0.0f ? 127.0f / amax : 1.0f;
        int8_t *qr = q + (long)r * k;
        for (int i = 0; i < k; i++) {
            float v = round_even(xr[i] * s);
            qr[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
        }
        scale[r] = s;
    }
}

void sw_q8_row_sums(const int8_t *q, int n, int k, int32_t *sums)
{
    for (int j = 0; j < n; j++) {
        int32_t s = 0;
        for (int i = 0; i < k; i++)
            s += q[(long)j * k + i];
        sums[j] = s;
    }
}

static inline void store(float *c, float v, float beta)
{
    *c = beta == 0.0f ? v : v + beta * *c;
}

void sw_q8_gemm_nt_scalar(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                          const int8_t *qw, const float *sw, float beta, float *c, int ldc)
{
    for (int j = n0; j < n1; j++)
        for (int r = 0; r < m; r++) {
            const int8_t *a = qa + (long)r * k, *w = qw + (long)j * k;
            int32_t acc = 0;
            for (int i = 0; i < k; i++)
                acc += (int32_t)a[i] * (int32_t)w[i];
            store(c + (long)r * ldc + j, (float)acc / (sa[r] * sw[j]), beta);
        }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define RB   4 /* rows of a per block */
#define CB   4 /* weight rows per block: 16 accumulators, 8 loads per 16 dot steps */

/* One block of rb x CB outputs (rb a constant where it is inlined, so each
 * size is its own loop). Each 64-byte step loads rb activation vectors
 * (flipped to unsigned by xor 0x80, i.e. + 128) and CB weight vectors and
 * issues rb * CB vpdpbusd; the tail uses masked loads, which read zeros past
 * k, and a zero weight byte adds nothing whatever its activation. */
VNNI static inline __attribute__((always_inline)) void
block_vnni(int rb, int nc, int k, const int8_t *qa, const float *sa, const int8_t *qw,
           const float *sw, const int32_t *w_sums, float beta, float *c, int ldc)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i acc[RB][CB];
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < CB; j++)
            acc[r][j] = _mm512_setzero_si512();
    for (int i = 0; i < k; i += 64) {
        __mmask64 mask = k - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (k - i)) - 1);
        __m512i w[CB];
        for (int j = 0; j < CB; j++)
            w[j] = j < nc ? _mm512_maskz_loadu_epi8(mask, qw + (long)j * k + i)
                          : _mm512_setzero_si512();
        for (int r = 0; r < rb; r++) {
            __m512i au =
                _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, qa + (long)r * k + i), flip);
            for (int j = 0; j < CB; j++)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], au, w[j]);
        }
    }
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < nc; j++) {
            int32_t dot = _mm512_reduce_add_epi32(acc[r][j]) - 128 * w_sums[j];
            store(c + (long)r * ldc + j, (float)dot / (sa[r] * sw[j]), beta);
        }
}

/* Weight rows in blocks of CB (outer: each block is read from memory once),
 * activation rows in blocks of RB, the last one to three rows one at a time. */
VNNI static void gemm_vnni(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                           const int8_t *qw, const float *sw, const int32_t *w_sums, float beta,
                           float *c, int ldc)
{
    for (int j0 = n0; j0 < n1; j0 += CB) {
        int nc = n1 - j0 < CB ? n1 - j0 : CB;
        const int8_t *wb = qw + (long)j0 * k;
        int r0 = 0;
        for (; r0 + RB <= m; r0 += RB)
            block_vnni(RB, nc, k, qa + (long)r0 * k, sa + r0, wb, sw + j0, w_sums + j0, beta,
                       c + (long)r0 * ldc + j0, ldc);
        for (; r0 < m; r0++)
            block_vnni(1, nc, k, qa + (long)r0 * k, sa + r0, wb, sw + j0, w_sums + j0, beta,
                       c + (long)r0 * ldc + j0, ldc);
    }
}

int sw_q8_has_vnni(void)
{
    return sw_cpu_has_vnni();
}
#else
int sw_q8_has_vnni(void)
{
    return 0;
}
#endif

void sw_q8_gemm_nt(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                   const int8_t *qw, const float *sw, const int32_t *w_sums, float beta, float *c,
                   int ldc)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
    if (sw_q8_has_vnni()) {
        gemm_vnni(m, n0, n1, k, qa, sa, qw, sw, w_sums, beta, c, ldc);
        return;
    }
#endif
    (void)w_sums;
    sw_q8_gemm_nt_scalar(m, n0, n1, k, qa, sa, qw, sw, beta, c, ldc);
}
