/* The AMX-BF16 product of compute_type "bfloat16" (bf16_gemm.h), written
 * once against amx_tile_ops.h. A file includes it after defining
 * SW_AMX_BF16_NAME and SW_AMX_BF16_LINKAGE: amx_bf16_hw.c for the
 * instructions, amx_bf16_emu.c for their emulation at every CPU level.
 *
 * Operands, both padded with zeros to kp (a multiple of 32) along k:
 *   a  [m, kp] bf16 activation rows: A tiles of up to 16 rows x 32 bf16;
 *   w0, w1: weight blocks packed for TDPBF16PS (sw_bf16_pack_block): for each
 *      pair of k, the 16 columns' two bf16 side by side, 64 bytes; 16 pairs
 *      (k = 32) are one B tile of 16 rows x 64 bytes. w1 is NULL for one block.
 * Tiles: 0-3 the fp32 sums of two row halves x two blocks, 4-5 the row halves'
 * activations, 6-7 the blocks' weights. A padded zero adds +0 to a partial
 * sum, which changes nothing. The epilogue is c = alpha * sum (+ beta * c)
 * for the first `cols` of the 16 or 32 columns. */

#ifndef SW_AMX_BF16_NAME
#error "define SW_AMX_BF16_NAME and SW_AMX_BF16_LINKAGE before including amx_bf16_body.h"
#endif

SW_AMX_BF16_LINKAGE void SW_AMX_BF16_NAME(int m, int kp, const uint16_t *a, const uint16_t *w0,
                                          const uint16_t *w1, int cols, float alpha, float beta,
                                          float *c, int ldc)
{
    float sums[32][32];
    int pair = w1 != NULL, steps = kp / 32;
    long a_stride = 2L * kp;
    for (int r0 = 0; r0 < m; r0 += 32) {
        int rows = m - r0 < 32 ? m - r0 : 32;
        int top = rows < 16 ? rows : 16, bottom = rows - top;
        const uint16_t *ar = a + (long)r0 * kp;
        sw_tile_config cfg;
        sw_tile_halves_by_blocks(&cfg, top, bottom);
        SW_TILE_CONFIG(&cfg); /* zeroes every tile */
        for (int s = 0; s < steps; s++) {
            SW_TILE_LOAD(4, ar + 32L * s, a_stride);
            SW_TILE_LOAD(6, w0 + 512L * s, 64);
            SW_TILE_DPBF16PS(0, 4, 6);
            if (pair) {
                SW_TILE_LOAD(7, w1 + 512L * s, 64);
                SW_TILE_DPBF16PS(1, 4, 7);
            }
            if (bottom) {
                SW_TILE_LOAD(5, ar + 16L * kp + 32L * s, a_stride);
                SW_TILE_DPBF16PS(2, 5, 6);
                if (pair)
                    SW_TILE_DPBF16PS(3, 5, 7);
            }
        }
        SW_TILE_STORE(0, &sums[0][0], sizeof sums[0]);
        if (pair)
            SW_TILE_STORE(1, &sums[0][16], sizeof sums[0]);
        if (bottom) {
            SW_TILE_STORE(2, &sums[16][0], sizeof sums[0]);
            if (pair)
                SW_TILE_STORE(3, &sums[16][16], sizeof sums[0]);
        }
        for (int r = 0; r < rows; r++)
            for (int col = 0; col < cols; col++) {
                float *out = c + (long)(r0 + r) * ldc + col;
                float v = alpha * sums[r][col];
                *out = beta == 0.0f ? v : v + beta * *out;
            }
    }
    SW_TILE_RELEASE();
}
