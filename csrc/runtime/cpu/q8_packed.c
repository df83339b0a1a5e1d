#include "q8_packed.h"

#include "amx.h"
#include "cpu_dispatch.h"
#include "prefetch.h"
#include "q8_gemm.h"

#include <string.h>

#define BLOCK 16 /* weight rows per packed block: one 64-byte vector of int32 sums */

/* Bytes ahead of the block it multiplies a kernel asks for (prefetch.h),
 * at least 4 KB (most of a packed block of tiny.en) */
static inline long weight_bytes_ahead(int m)
{
    long bytes = sw_prefetch_ahead_bytes(m);
    return bytes < 4096 ? 4096 : bytes;
}

/* The scalar path's epilogue (q8_gemm.c's store): the same operations in
 * the same order, so every kernel below gives its bits. */
static inline void store(float *c, int32_t dot, float sa, float sw, float beta)
{
    float v = (float)dot / (sa * sw);
    *c = beta == 0.0f ? v : v + beta * *c;
}

/* Portable: one block of 16 sums per row, walking the groups in order. */
static void gemm_packed_scalar(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                               const int8_t *qw, const float *sw, float beta, float *c, int ldc)
{
    for (int b = b0; b < b1; b++) {
        const int8_t *wb = qw + (long)b * BLOCK * k;
        for (int r = 0; r < m; r++) {
            const int8_t *a = qa + (long)r * k;
            int32_t acc[BLOCK] = {0};
            for (int g = 0; g < k / 4; g++)
                for (int col = 0; col < BLOCK; col++)
                    for (int t = 0; t < 4; t++)
                        acc[col] += (int32_t)a[4 * g + t] * (int32_t)wb[(long)g * 64 + col * 4 + t];
            for (int col = 0; col < BLOCK; col++)
                store(c + (long)r * ldc + b * BLOCK + col, acc[col], sa[r], sw[b * BLOCK + col],
                      beta);
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#include <immintrin.h>

/* Four activation bytes as one int32, any alignment. */
static inline int32_t four_bytes(const int8_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#define VNNI   __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
#define V_ROWS 8 /* activation rows per tile */
#define V_COLS 3 /* blocks per tile: 24 accumulators, 3 weight loads and 8 broadcasts a group */

/* R rows against C blocks (both constants where inlined). Activations go in
 * as unsigned (xor 0x80 adds 128) and 128 times each weight row's sum comes
 * off at the end; vpdpbusd does not saturate. */
VNNI static inline __attribute__((always_inline)) void
tile_vnni(int R, int C, int k, const int8_t *qa, const float *sa, const int8_t *wb, const float *sw,
          const int32_t *w_sums, float beta, float *c, int ldc)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512i acc[V_ROWS][V_COLS];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++)
            acc[r][j] = _mm512_setzero_si512();
    for (int g = 0; g < k / 4; g++) {
        __m512i w[V_COLS];
        for (int j = 0; j < C; j++)
            w[j] = _mm512_loadu_si512((const void *)(wb + (long)j * BLOCK * k + (long)g * 64));
        for (int r = 0; r < R; r++) {
            __m512i a =
                _mm512_xor_si512(_mm512_set1_epi32(four_bytes(qa + (long)r * k + 4 * g)), flip);
            for (int j = 0; j < C; j++)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], a, w[j]);
        }
    }
    for (int j = 0; j < C; j++) {
        __m512i back = _mm512_slli_epi32(_mm512_loadu_si512((const void *)(w_sums + BLOCK * j)), 7);
        __m512 scale = _mm512_loadu_ps(sw + BLOCK * j);
        for (int r = 0; r < R; r++) {
            __m512 v = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][j], back)),
                                     _mm512_mul_ps(_mm512_set1_ps(sa[r]), scale));
            float *cr = c + (long)r * ldc + BLOCK * j;
            if (beta != 0.0f)
                v = _mm512_add_ps(v, _mm512_mul_ps(_mm512_set1_ps(beta), _mm512_loadu_ps(cr)));
            _mm512_storeu_ps(cr, v);
        }
    }
}

#define VNNI_CASE(R_, C_)                                                                          \
    case (R_)*4 + (C_):                                                                            \
        tile_vnni(R_, C_, k, a, sa + r0, wb, sw + col, w_sums + col, beta, out, ldc);              \
        break;
#define VNNI_ROW(R_) VNNI_CASE(R_, 1) VNNI_CASE(R_, 2) VNNI_CASE(R_, 3)

/* Blocks in groups of V_COLS (outer: a group stays in cache while every row
 * tile passes over it), rows in tiles of V_ROWS. */
VNNI static void gemm_packed_vnni(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                                  const int8_t *qw, const float *sw, const int32_t *w_sums,
                                  float beta, float *c, int ldc)
{
    const int8_t *end = qw + (long)b1 * BLOCK * k;
    long ahead = weight_bytes_ahead(m);
    for (int b = b0; b < b1; b += V_COLS) {
        int C = b1 - b < V_COLS ? b1 - b : V_COLS, col = b * BLOCK;
        const int8_t *wb = qw + (long)col * k;
        sw_prefetch_span(wb + ahead, (long)C * BLOCK * k, end);
        for (int r0 = 0; r0 < m; r0 += V_ROWS) {
            int R = m - r0 < V_ROWS ? m - r0 : V_ROWS;
            const int8_t *a = qa + (long)r0 * k;
            float *out = c + (long)r0 * ldc + col;
            switch (R * 4 + C) {
                VNNI_ROW(1)
                VNNI_ROW(2)
                VNNI_ROW(3)
                VNNI_ROW(4)
                VNNI_ROW(5)
                VNNI_ROW(6)
                VNNI_ROW(7)
                VNNI_ROW(8)
            default: break;
            }
        }
    }
}

#define AVX2   __attribute__((target("avx2")))
#define A_ROWS 4 /* rows per tile against one block (two 8-output halves): 8 accumulators */

/* AVX2 without VNNI: vpmaddubsw takes unsigned by signed bytes, so the
 * activation goes in as |a| and the weight takes a's sign (vpsignb); both
 * are at most 127 (quantization clamps), so a pair of products stays below
 * 32,767 and vpmaddwd by ones widens it to int32 exactly. */
AVX2 static inline __attribute__((always_inline)) void tile_avx2(int R, int k, const int8_t *qa,
                                                                 const float *sa, const int8_t *wb,
                                                                 const float *sw, float beta,
                                                                 float *c, int ldc)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[A_ROWS][2];
    for (int r = 0; r < R; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int g = 0; g < k / 4; g++) {
        __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(wb + (long)g * 64));
        __m256i w1 = _mm256_loadu_si256((const __m256i *)(const void *)(wb + (long)g * 64 + 32));
        for (int r = 0; r < R; r++) {
            __m256i a = _mm256_set1_epi32(four_bytes(qa + (long)r * k + 4 * g));
            __m256i a_abs = _mm256_abs_epi8(a);
            __m256i p0 = _mm256_maddubs_epi16(a_abs, _mm256_sign_epi8(w0, a));
            __m256i p1 = _mm256_maddubs_epi16(a_abs, _mm256_sign_epi8(w1, a));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(p0, ones));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(p1, ones));
        }
    }
    for (int r = 0; r < R; r++)
        for (int h = 0; h < 2; h++) {
            __m256 v =
                _mm256_div_ps(_mm256_cvtepi32_ps(acc[r][h]),
                              _mm256_mul_ps(_mm256_set1_ps(sa[r]), _mm256_loadu_ps(sw + 8 * h)));
            float *cr = c + (long)r * ldc + 8 * h;
            if (beta != 0.0f)
                v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_set1_ps(beta), _mm256_loadu_ps(cr)));
            _mm256_storeu_ps(cr, v);
        }
}

AVX2 static void gemm_packed_avx2(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                                  const int8_t *qw, const float *sw, float beta, float *c, int ldc)
{
    const int8_t *end = qw + (long)b1 * BLOCK * k;
    long ahead = weight_bytes_ahead(m);
    for (int b = b0; b < b1; b++) {
        int col = b * BLOCK;
        const int8_t *wb = qw + (long)col * k;
        sw_prefetch_span(wb + ahead, (long)BLOCK * k, end);
        for (int r0 = 0; r0 < m; r0 += A_ROWS) {
            const int8_t *a = qa + (long)r0 * k;
            float *out = c + (long)r0 * ldc + col;
            switch (m - r0 < A_ROWS ? m - r0 : A_ROWS) {
            case 1: tile_avx2(1, k, a, sa + r0, wb, sw + col, beta, out, ldc); break;
            case 2: tile_avx2(2, k, a, sa + r0, wb, sw + col, beta, out, ldc); break;
            case 3: tile_avx2(3, k, a, sa + r0, wb, sw + col, beta, out, ldc); break;
            default: tile_avx2(4, k, a, sa + r0, wb, sw + col, beta, out, ldc);
            }
        }
    }
}
#endif

void sw_q8_gemm_nt_packed(int m, int n0, int n1, int n, int k, const int8_t *qa, const float *sa,
                          const int8_t *qw, const float *sw, const int32_t *w_sums, float beta,
                          float *c, int ldc)
{
    int whole = n / BLOCK * BLOCK, split = n1 < whole ? n1 : whole;
    if (split > n0) {
        int b0 = n0 / BLOCK, b1 = split / BLOCK;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
        sw_amx_path amx = m >= SW_AMX_MIN_ROWS && k >= 64 ? sw_amx_int8_path() : SW_AMX_NONE;
        if (amx != SW_AMX_NONE) /* the layout is already the tiles' (amx_q8_body.h) */
            sw_amx_q8_gemm_packed(amx, m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc);
        else if (sw_q8_has_vnni())
            gemm_packed_vnni(m, b0, b1, k, qa, sa, qw, sw, w_sums, beta, c, ldc);
        else if (sw_cpu_level_get() >= SW_CPU_V3)
            gemm_packed_avx2(m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc);
        else
#endif
            gemm_packed_scalar(m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc);
    }
    /* the rows after the last whole block are row-major, in place */
    int tail = n0 > whole ? n0 : whole;
    if (n1 > tail)
        sw_q8_gemm_nt(m, tail, n1, k, qa, sa, qw, sw, w_sums, beta, c, ldc);
}
