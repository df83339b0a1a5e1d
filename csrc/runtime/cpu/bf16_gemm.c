#include "bf16_gemm.h"

#include "elementwise_math.h"

#include <string.h>

void sw_bf16_round(const float *x, size_t n, uint16_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = sw_f32_to_bf16(x[i]);
}

void sw_bf16_round_f32(const float *x, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = sw_bf16_to_f32(sw_f32_to_bf16(x[i]));
}

void sw_bf16_widen(const uint16_t *w, size_t n, float *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = sw_bf16_to_f32(w[i]);
}

void sw_bf16_pack_block(const uint16_t *w, int n, int k, int j0, int kp, uint16_t *out)
{
    memset(out, 0, (size_t)kp * 16 * sizeof *out);
    for (int col = 0; col < 16 && j0 + col < n; col++) {
        const uint16_t *row = w + (long)(j0 + col) * k;
        for (int i = 0; i < k; i++) /* pair i / 2, column col, lane i % 2 */
            out[(long)(i / 2) * 32 + col * 2 + i % 2] = row[i];
    }
}

void sw_bf16_gemm_tiles(sw_amx_path path, int m, int j0, int j1, int n, int k, const uint16_t *a,
                        const uint16_t *w, float alpha, float beta, float *c, int ldc,
                        uint16_t *pack)
{
    int kp = sw_bf16_padded_k(k);
    uint16_t *p0 = pack, *p1 = pack + (long)16 * kp;
    for (int j = j0; j < j1; j += 32) {
        int cols = j1 - j < 32 ? j1 - j : 32;
        sw_bf16_pack_block(w, n, k, j, kp, p0);
        if (cols > 16)
            sw_bf16_pack_block(w, n, k, j + 16, kp, p1);
        const uint16_t *w1 = cols > 16 ? p1 : NULL;
        if (path == SW_AMX_HARDWARE)
            sw_amx_bf16_block_hw(m, kp, a, p0, w1, cols, alpha, beta, c + j, ldc);
        else
            sw_amx_bf16_block_emu(m, kp, a, p0, w1, cols, alpha, beta, c + j, ldc);
    }
}
