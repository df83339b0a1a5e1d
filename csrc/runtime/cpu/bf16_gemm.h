/* compute_type "bfloat16" on the CPU: float32 in and out, bfloat16 inside.
 * A linear layer's weight [n, k] is stored as bfloat16; each product rounds
 * its float32 activations to bfloat16 (to nearest even) and sums the exact
 * bf16 x bf16 products in float32. Where the CPU has AMX-BF16 the sums run
 * on the tiles (TDPBF16PS, amx_bf16_body.h); elsewhere the rounded operands
 * are widened back to float32 and go through the float32 product (OpenBLAS):
 * the same products, summed in another order, so the two paths agree to
 * float32 rounding, not to the bit (docs/amx.md). */
#ifndef SW_BF16_GEMM_H
#define SW_BF16_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "amx.h"

/* out[i] = x[i] rounded to bfloat16 (nearest even), for n values. */
void sw_bf16_round(const float *x, size_t n, uint16_t *out);

/* out[i] = x[i] rounded to bfloat16 and widened back to float32. */
void sw_bf16_round_f32(const float *x, size_t n, float *out);

/* out[i] = the bfloat16 w[i] as float32 (exact). */
void sw_bf16_widen(const uint16_t *w, size_t n, float *out);

/* k padded for the tiles: a multiple of 32. */
static inline int sw_bf16_padded_k(int k)
{
    return (k + 31) / 32 * 32;
}

/* Columns [j0, j0 + 16) of the row-major [n, k] bfloat16 weight in the tiles'
 * layout (kp / 2 rows of 16 pairs), zeros past n and past k. */
void sw_bf16_pack_block(const uint16_t *w, int n, int k, int j0, int kp, uint16_t *out);

/* c[r, j] = alpha * sum + beta * c[r, j] for r < m and j in [j0, j1) (j0 a
 * multiple of 16) on the tiles: `a` holds the m activation rows already
 * rounded, [m, kp] with zeros past k; pack is scratch for two blocks
 * (32 * kp values). */
void sw_bf16_gemm_tiles(sw_amx_path path, int m, int j0, int j1, int n, int k, const uint16_t *a,
                        const uint16_t *w, float alpha, float beta, float *c, int ldc,
                        uint16_t *pack);

/* The tile kernel's two builds (amx_bf16_body.h); the emulated one runs at
 * the level sw_cpu_level_get() gives. */
void sw_amx_bf16_block_emu(int m, int kp, const uint16_t *a, const uint16_t *w0, const uint16_t *w1,
                           int cols, float alpha, float beta, float *c, int ldc);
void sw_amx_bf16_block_hw(int m, int kp, const uint16_t *a, const uint16_t *w0, const uint16_t *w1,
                          int cols, float alpha, float beta, float *c, int ldc);

#endif
