#include "narrow_gemm.h"

#include "cpu_dispatch.h"

#ifdef SW_MULTIVERSION
#include <immintrin.h>

/* R rows x 32 columns, 2R sums of 16 lanes (R <= 8: 16 of the 32
 * registers); row r's inputs in `taps` pieces of c_in floats, piece t where
 * rows[r * taps + t] points. The sums start at zero, or at y with acc. */
SW_TARGET_V4 SW_ALWAYS_INLINE void tile32_v4(int R, int taps, int64_t c_in,
                                             const float *const *rows, const float *wt, int64_t n,
                                             float *y, int64_t ldy, int acc)
{
    __m512 lo[8], hi[8];
    for (int r = 0; r < R; r++) {
        lo[r] = acc ? _mm512_loadu_ps(y + r * ldy) : _mm512_setzero_ps();
        hi[r] = acc ? _mm512_loadu_ps(y + r * ldy + 16) : _mm512_setzero_ps();
    }
    for (int t = 0; t < taps; t++) {
        const float *p[8];
        for (int r = 0; r < R; r++)
            p[r] = rows[r * taps + t];
        const float *w = wt + t * c_in * n;
        for (int64_t kk = 0; kk < c_in; kk++) {
            __m512 w0 = _mm512_loadu_ps(w + kk * n), w1 = _mm512_loadu_ps(w + kk * n + 16);
            for (int r = 0; r < R; r++) {
                __m512 x = _mm512_set1_ps(p[r][kk]);
                lo[r] = _mm512_fmadd_ps(x, w0, lo[r]);
                hi[r] = _mm512_fmadd_ps(x, w1, hi[r]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        _mm512_storeu_ps(y + r * ldy, lo[r]);
        _mm512_storeu_ps(y + r * ldy + 16, hi[r]);
    }
}

/* 16 columns (n not a multiple of 32): R rows x one register */
SW_TARGET_V4 SW_ALWAYS_INLINE void tile16_v4(int R, int taps, int64_t c_in,
                                             const float *const *rows, const float *wt, int64_t n,
                                             float *y, int64_t ldy, int acc)
{
    __m512 s[8];
    for (int r = 0; r < R; r++)
        s[r] = acc ? _mm512_loadu_ps(y + r * ldy) : _mm512_setzero_ps();
    for (int t = 0; t < taps; t++) {
        const float *w = wt + t * c_in * n;
        for (int64_t kk = 0; kk < c_in; kk++) {
            __m512 w0 = _mm512_loadu_ps(w + kk * n);
            for (int r = 0; r < R; r++)
                s[r] = _mm512_fmadd_ps(_mm512_set1_ps(rows[r * taps + t][kk]), w0, s[r]);
        }
    }
    for (int r = 0; r < R; r++)
        _mm512_storeu_ps(y + r * ldy, s[r]);
}

SW_TARGET_V4 static void narrow_v4(int64_t m, int64_t n, int taps, int64_t c_in,
                                   const float *const *rows, const float *wt, float *y, int64_t ldy,
                                   int acc)
{
    for (int64_t j0 = 0; j0 < n;) {
        int wide = n - j0 >= 32;
        int64_t r0 = 0;
        for (; r0 + 8 <= m; r0 += 8) {
            const float *const *p = rows + r0 * taps;
            if (wide)
                tile32_v4(8, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
            else
                tile16_v4(8, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
        }
        for (int R = 4; R >= 2; R /= 2) /* the rest in tiles of 4 and 2 where it can */
            if (m - r0 >= R) {
                const float *const *p = rows + r0 * taps;
                if (wide)
                    tile32_v4(R == 4 ? 4 : 2, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy,
                              acc);
                else
                    tile16_v4(R == 4 ? 4 : 2, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy,
                              acc);
                r0 += R;
            }
        for (; r0 < m; r0++) {
            const float *const *p = rows + r0 * taps;
            if (wide)
                tile32_v4(1, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
            else
                tile16_v4(1, taps, c_in, p, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
        }
        j0 += wide ? 32 : 16;
    }
}

/* AVX2: R rows x 16 columns in 2R registers of 8 (R <= 6: 12 of the 16) */
SW_TARGET_V3 SW_ALWAYS_INLINE void tile16_v3(int R, int taps, int64_t c_in,
                                             const float *const *rows, const float *wt, int64_t n,
                                             float *y, int64_t ldy, int acc)
{
    __m256 lo[6], hi[6];
    for (int r = 0; r < R; r++) {
        lo[r] = acc ? _mm256_loadu_ps(y + r * ldy) : _mm256_setzero_ps();
        hi[r] = acc ? _mm256_loadu_ps(y + r * ldy + 8) : _mm256_setzero_ps();
    }
    for (int t = 0; t < taps; t++) {
        const float *p[6];
        for (int r = 0; r < R; r++)
            p[r] = rows[r * taps + t];
        const float *w = wt + t * c_in * n;
        for (int64_t kk = 0; kk < c_in; kk++) {
            __m256 w0 = _mm256_loadu_ps(w + kk * n), w1 = _mm256_loadu_ps(w + kk * n + 8);
            for (int r = 0; r < R; r++) {
                __m256 x = _mm256_broadcast_ss(p[r] + kk);
                lo[r] = _mm256_fmadd_ps(x, w0, lo[r]);
                hi[r] = _mm256_fmadd_ps(x, w1, hi[r]);
            }
        }
    }
    for (int r = 0; r < R; r++) {
        _mm256_storeu_ps(y + r * ldy, lo[r]);
        _mm256_storeu_ps(y + r * ldy + 8, hi[r]);
    }
}

SW_TARGET_V3 static void narrow_v3(int64_t m, int64_t n, int taps, int64_t c_in,
                                   const float *const *rows, const float *wt, float *y, int64_t ldy,
                                   int acc)
{
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        int64_t r0 = 0;
        for (; r0 + 6 <= m; r0 += 6)
            tile16_v3(6, taps, c_in, rows + r0 * taps, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
        /* what is left in tiles of 4 and 2 where it can: one row alone is
         * one dependency chain a register (the LSTM's 16 rows are 6 + 6 + 4) */
        if (m - r0 >= 4) {
            tile16_v3(4, taps, c_in, rows + r0 * taps, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
            r0 += 4;
        }
        if (m - r0 >= 2) {
            tile16_v3(2, taps, c_in, rows + r0 * taps, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
            r0 += 2;
        }
        for (; r0 < m; r0++)
            tile16_v3(1, taps, c_in, rows + r0 * taps, wt + j0, n, y + r0 * ldy + j0, ldy, acc);
    }
}
#endif

int sw_narrow_gemm_ok(int64_t n)
{
#ifdef SW_MULTIVERSION
    return n > 0 && n % 16 == 0 && sw_cpu_level_get() >= SW_CPU_V3;
#else
    (void)n;
    return 0;
#endif
}

void sw_narrow_gemm_rows(int64_t m, int64_t n, int taps, int64_t c_in, const float *const *rows,
                         const float *wt, float *y, int64_t ldy, int accumulate)
{
#ifdef SW_MULTIVERSION
    if (sw_cpu_level_get() >= SW_CPU_V4)
        narrow_v4(m, n, taps, c_in, rows, wt, y, ldy, accumulate);
    else
        narrow_v3(m, n, taps, c_in, rows, wt, y, ldy, accumulate);
#else
    (void)m, (void)n, (void)taps, (void)c_in, (void)rows, (void)wt, (void)y, (void)ldy;
    (void)accumulate;
#endif
}
