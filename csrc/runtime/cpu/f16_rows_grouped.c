#include "f16_rows_grouped.h"

#include "cpu_dispatch.h"
#include "prefetch.h"

#ifdef SW_MULTIVERSION
#include <immintrin.h>

/* Weight rows per group: one output vector of eight per input row. */
#define GROUP 8
/* Input rows per AVX2 tile: 2 R accumulators of the 16 ymm registers. */
#define V3_TILE 6

/* The eight outputs of one input row from its eight lane vectors s[j]
 * (lane l: sixteen-lane sums l and l + 8 already added, the first step of
 * small_gemm.c's pairwise reduction). Output j is ((s0 + s4) + (s2 + s6)) +
 * ((s1 + s5) + (s3 + s7)) of s[j]'s lanes, as reduce_v8 adds them; the tree
 * works on two or four outputs per register and ends in the order
 * 0 2 4 6 1 3 5 7, which the last permute undoes. */
SW_TARGET_V3 SW_ALWAYS_INLINE __m256 reduce_group(const __m256 *s)
{
    __m256 x[4];
    for (int p = 0; p < 4; p++) /* lanes l + l + 4, outputs 2p and 2p + 1 */
        x[p] = _mm256_add_ps(_mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x20),
                             _mm256_permute2f128_ps(s[2 * p], s[2 * p + 1], 0x31));
    __m256 z[2]; /* then + l + 2: outputs 0 2 | 1 3, and 4 6 | 5 7 */
    for (int p = 0; p < 2; p++)
        z[p] = _mm256_add_ps(_mm256_shuffle_ps(x[2 * p], x[2 * p + 1], 0x44),
                             _mm256_shuffle_ps(x[2 * p], x[2 * p + 1], 0xee));
    __m256 r = _mm256_add_ps(_mm256_shuffle_ps(z[0], z[1], 0x88), /* then + l + 1 */
                             _mm256_shuffle_ps(z[0], z[1], 0xdd));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* c's eight outputs of input row r: the sums, or the sums added to c */
SW_TARGET_V3 SW_ALWAYS_INLINE void store_group(float *c, __m256 d, float beta)
{
    _mm256_storeu_ps(c, beta == 0.0f ? d : _mm256_add_ps(d, _mm256_loadu_ps(c)));
}

/* R input rows against one weight row, both halves of the sixteen lanes in
 * one pass (lo: lanes 0-7, hi: 8-15), fused multiply-adds in k order as
 * small_gemm.c's tile8h_both; s[r * GROUP] = lo + hi. */
SW_TARGET_V3 SW_ALWAYS_INLINE void sums_v3(int R, const float *const *a, const uint16_t *w, int k,
                                           __m256 *s)
{
    __m256 lo[V3_TILE], hi[V3_TILE];
    for (int r = 0; r < R; r++)
        lo[r] = hi[r] = _mm256_setzero_ps();
    for (int i = 0; i < k; i += 16) {
        __m256 w0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + i)));
        __m256 w1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(w + i + 8)));
        for (int r = 0; r < R; r++) {
            lo[r] = _mm256_fmadd_ps(_mm256_loadu_ps(a[r] + i), w0, lo[r]);
            hi[r] = _mm256_fmadd_ps(_mm256_loadu_ps(a[r] + i + 8), w1, hi[r]);
        }
    }
    for (int r = 0; r < R; r++)
        s[r * GROUP] = _mm256_add_ps(lo[r], hi[r]);
}

SW_TARGET_V3 static int grouped_v3(int m, int n0, int n1, int k, const float *a, int lda,
                                   const uint16_t *w, int ldw, float beta, float *c, int ldc)
{
    __m256 s[V3_TILE * GROUP];
    int ahead = sw_prefetch_ahead_f16_rows(m, k), j0 = n0;
    for (; j0 + GROUP <= n1; j0 += GROUP)
        for (int r0 = 0; r0 < m; r0 += V3_TILE) {
            int R = m - r0 < V3_TILE ? m - r0 : V3_TILE;
            const float *rows[V3_TILE];
            for (int r = 0; r < R; r++)
                rows[r] = a + (long)(r0 + r) * lda;
            for (int j = 0; j < GROUP; j++) {
                const uint16_t *wj = w + (long)(j0 + j) * ldw;
                if (r0 == 0 && j0 + j + ahead < n1)
                    sw_prefetch_span(wj + (long)ahead * ldw, 2L * k, NULL);
                switch (R) { /* constant R: the sums stay in registers */
                case 1: sums_v3(1, rows, wj, k, s + j); break;
                case 2: sums_v3(2, rows, wj, k, s + j); break;
                case 3: sums_v3(3, rows, wj, k, s + j); break;
                case 4: sums_v3(4, rows, wj, k, s + j); break;
                case 5: sums_v3(5, rows, wj, k, s + j); break;
                default: sums_v3(6, rows, wj, k, s + j); break;
                }
            }
            for (int r = 0; r < R; r++)
                store_group(c + (long)(r0 + r) * ldc + j0, reduce_group(s + r * GROUP), beta);
        }
    return j0;
}

/* AVX-512: one sixteen-lane sum per (input row, weight row), as
 * small_gemm.c's tile16h. */
SW_TARGET_V4 SW_ALWAYS_INLINE void sums_v4(int R, const float *const *a, const uint16_t *w, int k,
                                           __m512 *s)
{
    __m512 acc[SW_F16_GROUPED_MAX_ROWS];
    for (int r = 0; r < R; r++)
        acc[r] = _mm512_setzero_ps();
    for (int i = 0; i < k; i += 16) {
        __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(w + i)));
        for (int r = 0; r < R; r++)
            acc[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a[r] + i), wv, acc[r]);
    }
    for (int r = 0; r < R; r++)
        s[r * GROUP] = acc[r];
}

/* Lane l plus lane l + 8 of two weight rows' sums (reduce_v16's first
 * step): the first's eight in the low half, the second's in the high. */
SW_TARGET_V4 SW_ALWAYS_INLINE void halves_added(__m512 p, __m512 q, __m256 *lo, __m256 *hi)
{
    __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(p, q, 0x44), _mm512_shuffle_f32x4(p, q, 0xee));
    *lo = _mm512_castps512_ps256(x);
    *hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
}

SW_TARGET_V4 static int grouped_v4(int m, int n0, int n1, int k, const float *a, int lda,
                                   const uint16_t *w, int ldw, float beta, float *c, int ldc)
{
    __m512 s[SW_F16_GROUPED_MAX_ROWS * GROUP];
    const float *rows[SW_F16_GROUPED_MAX_ROWS];
    for (int r = 0; r < m; r++)
        rows[r] = a + (long)r * lda;
    int ahead = sw_prefetch_ahead_f16_rows(m, k), j0 = n0;
    for (; j0 + GROUP <= n1; j0 += GROUP) {
        for (int j = 0; j < GROUP; j++) {
            const uint16_t *wj = w + (long)(j0 + j) * ldw;
            if (j0 + j + ahead < n1)
                sw_prefetch_span(wj + (long)ahead * ldw, 2L * k, NULL);
            switch (m) {
            case 1: sums_v4(1, rows, wj, k, s + j); break;
            case 2: sums_v4(2, rows, wj, k, s + j); break;
            case 3: sums_v4(3, rows, wj, k, s + j); break;
            case 4: sums_v4(4, rows, wj, k, s + j); break;
            case 5: sums_v4(5, rows, wj, k, s + j); break;
            case 6: sums_v4(6, rows, wj, k, s + j); break;
            case 7: sums_v4(7, rows, wj, k, s + j); break;
            default: sums_v4(8, rows, wj, k, s + j); break;
            }
        }
        for (int r = 0; r < m; r++) {
            __m256 h[GROUP];
            for (int p = 0; p < GROUP; p += 2)
                halves_added(s[r * GROUP + p], s[r * GROUP + p + 1], &h[p], &h[p + 1]);
            store_group(c + (long)r * ldc + j0, reduce_group(h), beta);
        }
    }
    return j0;
}
#endif

int sw_f16_rows_grouped_ok(int m, int k, float alpha, float beta)
{
#ifdef SW_MULTIVERSION
    return m >= 1 && m <= SW_F16_GROUPED_MAX_ROWS && k > 0 && k % 16 == 0 && alpha == 1.0f &&
           (beta == 0.0f || beta == 1.0f) && sw_cpu_level_get() >= SW_CPU_V3;
#else
    (void)m, (void)k, (void)alpha, (void)beta;
    return 0;
#endif
}

int sw_f16_rows_grouped(int m, int n0, int n1, int k, const float *a, int lda, const uint16_t *w,
                        int ldw, float beta, float *c, int ldc)
{
#ifdef SW_MULTIVERSION
    if (sw_cpu_level_get() >= SW_CPU_V4)
        return grouped_v4(m, n0, n1, k, a, lda, w, ldw, beta, c, ldc);
    return grouped_v3(m, n0, n1, k, a, lda, w, ldw, beta, c, ldc);
#else
    (void)m, (void)n1, (void)k, (void)a, (void)lda, (void)w, (void)ldw, (void)beta, (void)c;
    (void)ldc;
    return n0;
#endif
}
