/* The AMX-INT8 product on the packed int8 weights (q8_packed.h), written once
 * against amx_tile_ops.h. A file includes it after defining SW_AMX_Q8_NAME
 * (the function's name) and SW_AMX_Q8_LINKAGE (its attributes): amx_q8_hw.c
 * for the instructions, amx_q8_emu.c for their emulation at every CPU level.
 *
 * The packed layout is already what TDPBSSD takes as its second operand:
 * a block of 16 weight rows stores, for each group of four k, the 16 rows'
 * four bytes side by side, 64 bytes; 16 groups (k = 64) are one B tile of
 * 16 rows x 64 bytes at stride 64. The activation rows are A tiles as they
 * lie (up to 16 rows x 64 bytes at stride k). Both operands are signed, so
 * unlike the VNNI kernel nothing is flipped to unsigned and no weight sums
 * come off. Tiles: 0-3 the int32 sums of two row halves x two blocks,
 * 4-5 the row halves' activations, 6-7 the two blocks' weights.
 *
 * The sums are exact (|sum| < 127 * 127 * k), so the result has the bits of
 * sw_q8_gemm_nt_scalar: same int32, same epilogue. */

#ifndef SW_AMX_Q8_NAME
#error "define SW_AMX_Q8_NAME and SW_AMX_Q8_LINKAGE before including amx_q8_body.h"
#endif

/* c[r, 16 * b0 ...) for r < m and the packed blocks [b0, b1); k % 4 == 0. */
SW_AMX_Q8_LINKAGE void SW_AMX_Q8_NAME(int m, int b0, int b1, int k, const int8_t *qa,
                                      const float *sa, const int8_t *qw, const float *sw,
                                      float beta, float *c, int ldc)
{
    int steps = k / 64; /* whole tiles along k; the rest (a multiple of 4) in plain C */
    int32_t dots[32][32];
    for (int r0 = 0; r0 < m; r0 += 32) {
        int rows = m - r0 < 32 ? m - r0 : 32;
        int top = rows < 16 ? rows : 16, bottom = rows - top;
        const int8_t *a = qa + (long)r0 * k;
        if (steps) { /* loading a configuration zeroes the tiles: once a row group */
            sw_tile_config cfg;
            sw_tile_halves_by_blocks(&cfg, top, bottom);
            SW_TILE_CONFIG(&cfg);
        }
        for (int b = b0; b < b1; b += 2) {
            int pair = b1 - b >= 2, cols = pair ? 32 : 16;
            const int8_t *w0 = qw + (long)b * 16 * k, *w1 = w0 + 16L * k;
            if (steps) {
                SW_TILE_ZERO(0);
                if (pair)
                    SW_TILE_ZERO(1);
                if (bottom) {
                    SW_TILE_ZERO(2);
                    if (pair)
                        SW_TILE_ZERO(3);
                }
                for (int s = 0; s < steps; s++) {
                    SW_TILE_LOAD(4, a + 64L * s, k);
                    SW_TILE_LOAD(6, w0 + 1024L * s, 64);
                    SW_TILE_DPBSSD(0, 4, 6);
                    if (pair) {
                        SW_TILE_LOAD(7, w1 + 1024L * s, 64);
                        SW_TILE_DPBSSD(1, 4, 7);
                    }
                    if (bottom) {
                        SW_TILE_LOAD(5, a + 16L * k + 64L * s, k);
                        SW_TILE_DPBSSD(2, 5, 6);
                        if (pair)
                            SW_TILE_DPBSSD(3, 5, 7);
                    }
                }
                SW_TILE_STORE(0, &dots[0][0], sizeof dots[0]);
                if (pair)
                    SW_TILE_STORE(1, &dots[0][16], sizeof dots[0]);
                if (bottom) {
                    SW_TILE_STORE(2, &dots[16][0], sizeof dots[0]);
                    if (pair)
                        SW_TILE_STORE(3, &dots[16][16], sizeof dots[0]);
                }
            } else {
                memset(dots, 0, sizeof dots);
            }
            /* k past the last whole tile: the same packed groups, in C */
            for (int r = 0; r < rows; r++)
                for (int col = 0; col < cols; col++) {
                    const int8_t *wb = (col < 16 ? w0 : w1) + (col % 16) * 4;
                    const int8_t *ar = a + (long)r * k;
                    int32_t extra = 0;
                    for (int t = 64 * steps; t < k; t++)
                        extra += (int32_t)ar[t] * (int32_t)wb[(long)(t / 4) * 64 + t % 4];
                    dots[r][col] += extra;
                }
            /* the scalar path's epilogue, operation for operation */
            for (int r = 0; r < rows; r++)
                for (int col = 0; col < cols; col++) {
                    float *out = c + (long)(r0 + r) * ldc + (long)b * 16 + col;
                    float v = (float)dots[r][col] / (sa[r0 + r] * sw[b * 16 + col]);
                    *out = beta == 0.0f ? v : v + beta * *out;
                }
        }
    }
    if (steps)
        SW_TILE_RELEASE(); /* back to the small register state */
}
