#include "small_gemm.h"

#include "cpu_dispatch.h"
#include "f16_rows_grouped.h"
#include "prefetch.h"
#include "widen.h"

#include <stdint.h>
#include <string.h>

#ifdef SW_MULTIVERSION
#include <immintrin.h>
#endif

/* The sum order every output gets: 16 interleaved partial sums (lane l adds
 * the terms i with i % 16 == l, in order of i), then the lanes pairwise. */
#define LANES 16

SW_ALWAYS_INLINE float reduce_lanes(float *lanes)
{
    /* pairwise, so the order does not depend on how lanes map to registers */
    for (int width = LANES / 2; width > 0; width /= 2)
        for (int l = 0; l < width; l++)
            lanes[l] += lanes[l + width];
    return lanes[0];
}

SW_ALWAYS_INLINE float dot16(const float *x, const float *y, int k)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= k; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += x[i + l] * y[i + l];
    for (int l = 0; i < k; i++, l++)
        acc[l] += x[i] * y[i];
    return reduce_lanes(acc);
}

/* The kernel computes a tile of R input rows against J weight rows at once,
 * R * J accumulators held in registers, so each vector loaded from an input
 * row serves J products and each from a weight row R. A vector holds W of
 * the 16 lanes (W = 16 on AVX-512, 8 on AVX2, 4 on SSE2); with W < 16 the
 * lanes go in 16 / W passes over k. Lane l still adds its terms in order of
 * i, with the same fused (or, on the baseline, unfused) multiply-add, so
 * every output has dot16's bits whatever the tile, the vector width or m:
 * a window decoded in a batch gets the logits it gets alone. */
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
typedef float v8 __attribute__((vector_size(32)));
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4), may_alias));

/* Input rows per block, in tiles of RT rows: they stay in L1 while a column
 * block's weight rows stream past them. */
#define ROW_TILES 5
/* Weight rows per column block: they stay in L2 while every row block
 * passes over them. */
#define COL_BLOCK 128

/* Input rows a tile may hold: 4 in the tiles of four weight rows, up to 8
 * in the float16 path's tiles of one weight row. */
#define F16_MAX_TILE 8

/* Lane l of a vector plus lane l + width, for each lane below width: one
 * step of reduce_lanes on the lanes a vector holds. */
typedef int v16i __attribute__((vector_size(64)));
typedef int v8i __attribute__((vector_size(32)));

SW_ALWAYS_INLINE float reduce_v8(const v8 *sum)
{
    v8 s = *sum;
    s += __builtin_shuffle(s, (v8i){4, 5, 6, 7, 0, 1, 2, 3});
    s += __builtin_shuffle(s, (v8i){2, 3, 0, 1, 2, 3, 0, 1});
    s += __builtin_shuffle(s, (v8i){1, 0, 1, 0, 1, 0, 1, 0});
    return s[0];
}

SW_ALWAYS_INLINE float reduce_v16(const v16 *sum)
{
    v16 s = *sum;
    s += __builtin_shuffle(s, (v16i){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
    v8 lo;
    memcpy(&lo, &s, sizeof lo);
    return reduce_v8(&lo);
}

/* One tile: the R x J dot products over the first k16 (a multiple of 16)
 * terms. With k16 == k the vectors are reduced in registers and done[r][j]
 * holds each sum; otherwise out[r][j] holds the 16 lanes for finish_tile to
 * add the tail to. R and J are constants at each call site. The W = 8
 * passes meet in reduce_lanes' first step (lane l plus lane l + 8), which
 * is a vector add of the two passes' accumulators. */
#define DEFINE_TILE(NAME, TARGET, WT, VT, VTU, W, CAN, REDUCE, LOAD)                               \
    TARGET SW_ALWAYS_INLINE void NAME(int R, int J, const float *const *a, const WT *const *w,     \
                                      int k16, int k, float out[][4][LANES], float done[][4])      \
    {                                                                                              \
        for (int h = 0; h < LANES; h += W) {                                                       \
            VT acc[F16_MAX_TILE][4];                                                               \
            for (int r = 0; r < R; r++)                                                            \
                for (int j = 0; j < J; j++)                                                        \
                    acc[r][j] = (VT){0.0f};                                                        \
            for (int i = h; i < k16; i += LANES) {                                                 \
                VT wv[4];                                                                          \
                for (int j = 0; j < J; j++)                                                        \
                    wv[j] = LOAD(w[j] + i);                                                        \
                for (int r = 0; r < R; r++) {                                                      \
                    VT xv = *(const VTU *)(const void *)(a[r] + i);                                \
                    for (int j = 0; j < J; j++)                                                    \
                        acc[r][j] += xv * wv[j];                                                   \
                }                                                                                  \
            }                                                                                      \
            for (int r = 0; r < R; r++)                                                            \
                for (int j = 0; j < J; j++) {                                                      \
                    if (CAN && k16 == k && h + W == LANES) {                                       \
                        VT s = acc[r][j];                                                          \
                        if (W == 8) {                                                              \
                            VT first;                                                              \
                            memcpy(&first, out[r][j], sizeof first);                               \
                            s = first + s;                                                         \
                        }                                                                          \
                        done[r][j] = REDUCE(&s);                                                   \
                    } else {                                                                       \
                        memcpy(&out[r][j][h], &acc[r][j], sizeof acc[r][j]);                       \
                    }                                                                              \
                }                                                                                  \
        }                                                                                          \
    }

#define NO_REDUCE(s) 0.0f
#define LOAD_V16(p)  (*(const v16u *)(const void *)(p))
#define LOAD_V8(p)   (*(const v8u *)(const void *)(p))
#define LOAD_V4(p)   (*(const v4u *)(const void *)(p))
DEFINE_TILE(tile16, , float, v16, v16u, 16, 1, reduce_v16, LOAD_V16)
DEFINE_TILE(tile8, , float, v8, v8u, 8, 1, reduce_v8, LOAD_V8)
DEFINE_TILE(tile4, , float, v4, v4u, 4, 0, NO_REDUCE, LOAD_V4)

/* Tile shapes per level, chosen so accumulators, weight vectors and one
 * input vector fit the register file without spilling: 4 x 4 of 32 zmm,
 * 3 x 3 of 16 ymm (13 live), 3 x 3 of 16 xmm. */
SW_ALWAYS_INLINE void tile_any(int W, int R, int J, const float *const *a, const float *const *w,
                               int k16, int k, float out[][4][LANES], float done[][4])
{
    if (W == 16)
        tile16(R, J, a, w, k16, k, out, done);
    else if (W == 8)
        tile8(R, J, a, w, k16, k, out, done);
    else
        tile4(R, J, a, w, k16, k, out, done);
}

/* The tail (k % 16 terms) and the pairwise reduction where the tile did not
 * reduce, then alpha and beta. */
SW_ALWAYS_INLINE void finish_tile(int W, int R, int J, const float *const *a, const float *const *w,
                                  int k16, int k, float out[][4][LANES], float done[][4],
                                  float alpha, float beta, float *c, int ldc, int r0, int j0)
{
    int reduced = W >= 8 && k16 == k;
    for (int r = 0; r < R; r++)
        for (int j = 0; j < J; j++) {
            float d;
            if (reduced) {
                d = done[r][j];
            } else {
                float *lanes = out[r][j];
                for (int t = k16, l = 0; t < k; t++, l++)
                    lanes[l] += a[r][t] * w[j][t];
                d = reduce_lanes(lanes);
            }
            float v = alpha * d;
            float *cr = c + (long)(r0 + r) * ldc + j0 + j;
            *cr = beta == 0.0f ? v : v + beta * *cr;
        }
}

/* Dispatches a tile of r <= RT rows and j <= JT columns to the variant with
 * those constants, so the loops above unroll into registers. */
#define TILE_CASE(R_, J_)                                                                          \
    case (R_)*8 + (J_):                                                                            \
        tile_any(W, R_, J_, rows, cols, k16, k, out, done);                                        \
        finish_tile(W, R_, J_, rows, cols, k16, k, out, done, alpha, beta, c, ldc, r0, j0);        \
        break;

SW_ALWAYS_INLINE void gemm_blocks(int W, int RT, int JT, int m, int n0, int n1, int k, float alpha,
                                  const float *a, int lda, const float *w, int ldw, float beta,
                                  float *c, int ldc)
{
    int k16 = k & ~(LANES - 1);
    float out[4][4][LANES], done[4][4];
    for (int cb = n0; cb < n1; cb += COL_BLOCK) {
        int cb1 = cb + COL_BLOCK < n1 ? cb + COL_BLOCK : n1;
        for (int rb = 0; rb < m; rb += ROW_TILES * RT) {
            int rb1 = rb + ROW_TILES * RT < m ? rb + ROW_TILES * RT : m;
            for (int r0 = rb; r0 < rb1; r0 += RT) {
                int R = rb1 - r0 < RT ? rb1 - r0 : RT;
                const float *rows[4] = {0};
                for (int r = 0; r < R; r++)
                    rows[r] = a + (long)(r0 + r) * lda;
                for (int j0 = cb; j0 < cb1; j0 += JT) {
                    int J = cb1 - j0 < JT ? cb1 - j0 : JT;
                    const float *cols[4] = {0};
                    for (int j = 0; j < J; j++)
                        cols[j] = w + (long)(j0 + j) * ldw;
                    switch (R * 8 + J) {
                        TILE_CASE(1, 1)
                        TILE_CASE(1, 2)
                        TILE_CASE(1, 3)
                        TILE_CASE(1, 4)
                        TILE_CASE(2, 1)
                        TILE_CASE(2, 2)
                        TILE_CASE(2, 3)
                        TILE_CASE(2, 4)
                        TILE_CASE(3, 1)
                        TILE_CASE(3, 2)
                        TILE_CASE(3, 3)
                        TILE_CASE(3, 4)
                        TILE_CASE(4, 1)
                        TILE_CASE(4, 2)
                        TILE_CASE(4, 3)
                        TILE_CASE(4, 4)
                    default: break;
                    }
                }
            }
        }
    }
}

SW_TARGET_V4 static void small_gemm_v4(int m, int n0, int n1, int k, float alpha, const float *a,
                                       int lda, const float *w, int ldw, float beta, float *c,
                                       int ldc)
{
    gemm_blocks(16, 4, 4, m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
}

SW_TARGET_V3 static void small_gemm_v3(int m, int n0, int n1, int k, float alpha, const float *a,
                                       int lda, const float *w, int ldw, float beta, float *c,
                                       int ldc)
{
    gemm_blocks(8, 3, 3, m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
}

static void small_gemm_baseline(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                                const float *w, int ldw, float beta, float *c, int ldc)
{
    gemm_blocks(4, 3, 3, m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
}

void sw_small_gemm_nt(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                      const float *w, int ldw, float beta, float *c, int ldc)
{
    switch (sw_cpu_level_get()) {
    case SW_CPU_V4: small_gemm_v4(m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc); break;
    case SW_CPU_V3: small_gemm_v3(m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc); break;
    default: small_gemm_baseline(m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
    }
}

int sw_small_gemm_f16_rows(int k)
{
    int rows = k > 0 ? 32768 / k : 12;
    if (rows >= 12)
        return rows - rows % 12;
    return rows > 0 ? rows : 1;
}

#ifdef SW_MULTIVERSION
/* A few rows against float16 weights, widened in registers (F16C's
 * vcvtph2ps) by tiles of one weight row: the weight is read once, in
 * address order. Widening blocks into scratch first, or tiles of four
 * weight rows read side by side, left the hardware prefetcher four short
 * streams per tile: tiny.en's output layer (51,864 x 384 halves, 40 MB)
 * took 1.9 ms a step on a Zen 5 whose memory delivers it in 1.0 ms, and
 * this reads it at that speed. Each lane adds its terms in the same order,
 * so the bits are the widened path's. */
#define LOAD_H16(p) ((v16)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p))))
#define LOAD_H8(p)  ((v8)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p))))
DEFINE_TILE(tile16h, SW_TARGET_V4, uint16_t, v16, v16u, 16, 1, reduce_v16, LOAD_H16)

/* AVX2's eight lanes: both halves of the 16 lanes in one pass over the
 * weight row (DEFINE_TILE's W = 8 passes make two dependency chains one
 * after the other and read the row twice), then lane l + lane l + 8 and
 * reduce_v8: the sums and the order of tile8's. */
SW_TARGET_V3 SW_ALWAYS_INLINE void tile8h_both(int R, int J, const float *const *a,
                                               const uint16_t *const *w, int k16, int k,
                                               float out[][4][LANES], float done[][4])
{
    (void)J, (void)k, (void)out;
    v8 lo[F16_MAX_TILE], hi[F16_MAX_TILE];
    for (int r = 0; r < R; r++)
        lo[r] = hi[r] = (v8){0.0f};
    for (int i = 0; i < k16; i += LANES) {
        v8 w0 = LOAD_H8(w[0] + i), w1 = LOAD_H8(w[0] + i + 8);
        for (int r = 0; r < R; r++) {
            lo[r] += LOAD_V8(a[r] + i) * w0;
            hi[r] += LOAD_V8(a[r] + i + 8) * w1;
        }
    }
    for (int r = 0; r < R; r++) {
        v8 s = lo[r] + hi[r];
        done[r][0] = reduce_v8(&s);
    }
}

/* Rows per tile against one weight row; more input rows than this take
 * the scratch path (each tile widens the row again). */
#define F16_ROW_TILE   8
#define F16_FUSED_ROWS 8

#define F16_CASE(TILE, W, R_)                                                                      \
    case R_:                                                                                       \
        TILE(R_, 1, rows, cols, k, k, out, done);                                                  \
        finish_tile(W, R_, 1, rows, none, k, k, out, done, alpha, beta, c, ldc, r0, j);            \
        break;

#define DEFINE_ROWS_F16(NAME, TARGET, TILE, W, ROW_TILE)                                           \
    TARGET static void NAME(int m, int n0, int n1, int k, float alpha, const float *a, int lda,    \
                            const uint16_t *w, int ldw, float beta, float *c, int ldc)             \
    {                                                                                              \
        float out[F16_MAX_TILE][4][LANES], done[F16_MAX_TILE][4];                                  \
        const float *none[4] = {0}; /* k % 16 == 0: no tail to read */                             \
        int ahead = sw_prefetch_ahead_f16_rows(m, k);                                              \
        for (int j = n0; j < n1; j++) {                                                            \
            const uint16_t *cols[4] = {w + (long)j * ldw};                                         \
            if (j + ahead < n1)                                                                    \
                sw_prefetch_span(w + (long)(j + ahead) * ldw, 2L * k, NULL);                       \
            for (int r0 = 0; r0 < m; r0 += ROW_TILE) {                                             \
                int R = m - r0 < ROW_TILE ? m - r0 : ROW_TILE;                                     \
                const float *rows[F16_ROW_TILE] = {0};                                             \
                for (int r = 0; r < R; r++)                                                        \
                    rows[r] = a + (long)(r0 + r) * lda;                                            \
                switch (R) {                                                                       \
                    F16_CASE(TILE, W, 1)                                                           \
                    F16_CASE(TILE, W, 2)                                                           \
                    F16_CASE(TILE, W, 3)                                                           \
                    F16_CASE(TILE, W, 4)                                                           \
                    F16_CASE(TILE, W, 5)                                                           \
                    F16_CASE(TILE, W, 6)                                                           \
                    F16_CASE(TILE, W, 7)                                                           \
                    F16_CASE(TILE, W, 8)                                                           \
                default: break;                                                                    \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_ROWS_F16(rows_f16_v4, SW_TARGET_V4, tile16h, 16, F16_ROW_TILE)
/* 2 R accumulators of 16 ymm registers: tiles of at most six rows */
DEFINE_ROWS_F16(rows_f16_v3, SW_TARGET_V3, tile8h_both, 8, 6)
#endif

void sw_small_gemm_nt_f16(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                          const void *w, int ldw, float beta, float *c, int ldc, float *scratch,
                          int rows)
{
#ifdef SW_MULTIVERSION
    /* whole groups of eight weight rows by f16_rows_grouped.c (the same
     * bits), the rest below */
    if (sw_f16_rows_grouped_ok(m, k, alpha, beta))
        n0 = sw_f16_rows_grouped(m, n0, n1, k, a, lda, w, ldw, beta, c, ldc);
    if (n0 >= n1)
        return;
    if (k % LANES == 0 && m <= F16_FUSED_ROWS) {
        sw_cpu_level level = sw_cpu_level_get();
        if (level == SW_CPU_V4) {
            rows_f16_v4(m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
            return;
        }
        if (level == SW_CPU_V3) {
            rows_f16_v3(m, n0, n1, k, alpha, a, lda, w, ldw, beta, c, ldc);
            return;
        }
    }
#endif
    const unsigned char *halves = w;
    for (int j0 = n0; j0 < n1; j0 += rows) {
        int here = n1 - j0 < rows ? n1 - j0 : rows;
        if (ldw == k) {
            sw_widen_f16_fast(halves + (size_t)j0 * (size_t)k * 2, scratch,
                              (size_t)here * (size_t)k);
        } else {
            for (int r = 0; r < here; r++)
                sw_widen_f16_fast(halves + (size_t)(j0 + r) * (size_t)ldw * 2,
                                  scratch + (size_t)r * (size_t)k, (size_t)k);
        }
        sw_small_gemm_nt(m, 0, here, k, alpha, a, lda, scratch, k, beta, c + j0, ldc);
    }
}

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
