#include "q8_gemm.h"

#include "cpu_dispatch.h"

#include <math.h>
#include <stdlib.h>

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

/* AVX2 without VNNI (Zen 1-3, Intel before Ice Lake, or a lowered
 * dispatch): vpmaddubsw multiplies unsigned by signed bytes, so each
 * activation byte goes in as |a| and its weight byte takes a's sign
 * (vpsignb). Both are at most 127 in magnitude (quantization clamps to
 * +-127), so a pair of products is at most 32,258 and the 16-bit sums
 * cannot saturate; vpmaddwd by ones widens them to int32. The sums are
 * exact, as in every other path. */
/* The bytes from..k of a row pair that a 32-byte vector step did not reach. */
static inline int32_t tail_dot(const int8_t *a, const int8_t *w, int from, int k)
{
    int32_t dot = 0;
    for (int t = from; t < k; t++)
        dot += (int32_t)a[t] * (int32_t)w[t];
    return dot;
}

#define AVX2    __attribute__((target("avx2")))
#define AVX2_RB 3 /* rows of a per tile: 9 accumulators, 3 weight vectors */
#define AVX2_CB 3

AVX2 static inline __attribute__((always_inline)) void block_avx2(int rb, int nc, int k,
                                                                  const int8_t *qa, const float *sa,
                                                                  const int8_t *qw, const float *sw,
                                                                  float beta, float *c, int ldc)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[AVX2_RB][AVX2_CB];
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < nc; j++)
            acc[r][j] = _mm256_setzero_si256();
    int i = 0;
    for (; i + 32 <= k; i += 32) {
        __m256i w[AVX2_CB];
        for (int j = 0; j < nc; j++)
            w[j] = _mm256_loadu_si256((const __m256i *)(const void *)(qw + (long)j * k + i));
        for (int r = 0; r < rb; r++) {
            __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(qa + (long)r * k + i));
            __m256i a_abs = _mm256_abs_epi8(a);
            for (int j = 0; j < nc; j++) {
                __m256i pairs = _mm256_maddubs_epi16(a_abs, _mm256_sign_epi8(w[j], a));
                acc[r][j] = _mm256_add_epi32(acc[r][j], _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    for (int r = 0; r < rb; r++)
        for (int j = 0; j < nc; j++) {
            __m128i s = _mm_add_epi32(_mm256_castsi256_si128(acc[r][j]),
                                      _mm256_extracti128_si256(acc[r][j], 1));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
            s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
            int32_t dot = _mm_cvtsi128_si32(s) + tail_dot(qa + (long)r * k, qw + (long)j * k, i, k);
            store(c + (long)r * ldc + j, (float)dot / (sa[r] * sw[j]), beta);
        }
}

/* One activation row against eight weight rows: the same exact sums as
 * block_avx2, but the eight accumulators fold together (three rounds of
 * pairwise adds) into one vector of eight dots, converted, scaled and
 * stored eight at a time. The fold and the scalar divide per output were a
 * large part of a decoding step's products (five rows against 51,864). The
 * division and the beta update are the scalar path's, lane by lane, so the
 * outputs keep their bits. */
AVX2 static void row_by_eight(int k, const int8_t *ar, float sa, const int8_t *qw, const float *sw,
                              float beta, float *c)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[8];
    for (int j = 0; j < 8; j++)
        acc[j] = _mm256_setzero_si256();
    int i = 0;
    for (; i + 32 <= k; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(ar + i));
        __m256i a_abs = _mm256_abs_epi8(a);
        for (int j = 0; j < 8; j++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(const void *)(qw + (long)j * k + i));
            __m256i pairs = _mm256_maddubs_epi16(a_abs, _mm256_sign_epi8(w, a));
            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(pairs, ones));
        }
    }
    /* hadd pairs neighbours within each 128-bit half: after two rounds the
     * low half holds the low halves' sums of accumulators 0-3 (and 4-7 in
     * the second vector), the high half the high halves' */
    __m256i h01 = _mm256_hadd_epi32(acc[0], acc[1]), h23 = _mm256_hadd_epi32(acc[2], acc[3]);
    __m256i h45 = _mm256_hadd_epi32(acc[4], acc[5]), h67 = _mm256_hadd_epi32(acc[6], acc[7]);
    __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
    __m256i dots = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20),
                                    _mm256_permute2x128_si256(q0, q1, 0x31));
    if (i < k) {
        int32_t tail[8];
        for (int j = 0; j < 8; j++)
            tail[j] = tail_dot(ar, qw + (long)j * k, i, k);
        dots = _mm256_add_epi32(dots, _mm256_loadu_si256((const __m256i *)(const void *)tail));
    }
    __m256 v = _mm256_div_ps(_mm256_cvtepi32_ps(dots),
                             _mm256_mul_ps(_mm256_set1_ps(sa), _mm256_loadu_ps(sw)));
    if (beta != 0.0f)
        v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(c)));
    _mm256_storeu_ps(c, v);
}

/* The same walk as the VNNI kernel: weight rows in blocks (each read from
 * memory once), activation rows in tiles; each tile size is its own loop.
 * Whole blocks of eight weight rows go one activation row at a time. */
AVX2 static void gemm_avx2(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                           const int8_t *qw, const float *sw, float beta, float *c, int ldc)
{
    for (; n0 + 8 <= n1; n0 += 8)
        for (int r = 0; r < m; r++)
            row_by_eight(k, qa + (long)r * k, sa[r], qw + (long)n0 * k, sw + n0, beta,
                         c + (long)r * ldc + n0);
    for (int j0 = n0; j0 < n1; j0 += AVX2_CB) {
        int nc = n1 - j0 < AVX2_CB ? n1 - j0 : AVX2_CB;
        const int8_t *wb = qw + (long)j0 * k;
        for (int r0 = 0; r0 < m; r0 += AVX2_RB) {
            int rb = m - r0 < AVX2_RB ? m - r0 : AVX2_RB;
            const int8_t *ab = qa + (long)r0 * k;
            float *cb = c + (long)r0 * ldc + j0;
            if (rb == 3 && nc == 3)
                block_avx2(3, 3, k, ab, sa + r0, wb, sw + j0, beta, cb, ldc);
            else if (rb == 2)
                block_avx2(2, nc, k, ab, sa + r0, wb, sw + j0, beta, cb, ldc);
            else if (rb == 1)
                block_avx2(1, nc, k, ab, sa + r0, wb, sw + j0, beta, cb, ldc);
            else
                block_avx2(3, nc, k, ab, sa + r0, wb, sw + j0, beta, cb, ldc);
        }
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
    if (sw_cpu_level_get() >= SW_CPU_V3) {
        gemm_avx2(m, n0, n1, k, qa, sa, qw, sw, beta, c, ldc);
        return;
    }
#endif
    (void)w_sums;
    sw_q8_gemm_nt_scalar(m, n0, n1, k, qa, sa, qw, sw, beta, c, ldc);
}
