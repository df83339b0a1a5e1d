/* The emulated tile instructions (amx_emu.h says what they follow). Only
 * amx_emu.h includes this file. */
#ifndef SW_AMX_EMU_OPS_H
#define SW_AMX_EMU_OPS_H

#include <math.h>
#include <string.h>

static inline void sw_emu_tile_loadconfig(const sw_tile_config *cfg)
{
    sw_emu_tiles *s = sw_emu_here();
    memset(s, 0, sizeof *s);
    if (cfg->palette == 0) /* palette 0: back to the initial state */
        return;
    if (cfg->palette != 1)
        sw_emu_tile_fault("ldtilecfg", "palette other than 0 or 1");
    if (cfg->start_row != 0)
        sw_emu_tile_fault("ldtilecfg", "start_row is not 0");
    for (int i = 0; i < 14; i++)
        if (cfg->reserved[i])
            sw_emu_tile_fault("ldtilecfg", "reserved bytes not zero");
    for (int t = 0; t < 16; t++) {
        int used = t < SW_TILES;
        if (!used && (cfg->rows[t] || cfg->colsb[t]))
            sw_emu_tile_fault("ldtilecfg", "a tile past tmm7 configured");
        if (used && (cfg->rows[t] > SW_TILE_ROWS || cfg->colsb[t] > SW_TILE_ROWBYTES))
            sw_emu_tile_fault("ldtilecfg", "more than 16 rows or 64 bytes a row");
        if (used && (cfg->rows[t] == 0) != (cfg->colsb[t] == 0))
            sw_emu_tile_fault("ldtilecfg", "rows and colsb must be both zero or both set");
    }
    for (int t = 0; t < SW_TILES; t++) {
        s->rows[t] = cfg->rows[t];
        s->colsb[t] = cfg->colsb[t];
    }
    s->configured = 1;
}

static inline void sw_emu_tile_release(void)
{
    memset(sw_emu_here(), 0, sizeof(sw_emu_tiles));
}

static inline void sw_emu_tile_valid(const char *insn, int t)
{
    if (!sw_emu_here()->configured)
        sw_emu_tile_fault(insn, "no tile configuration loaded");
    if (t < 0 || t >= SW_TILES || sw_emu_here()->rows[t] == 0)
        sw_emu_tile_fault(insn, "tile not configured");
}

static inline void sw_emu_tile_zero(int t)
{
    sw_emu_tile_valid("tilezero", t);
    memset(sw_emu_here()->data[t], 0, sizeof sw_emu_here()->data[t]);
}

static inline void sw_emu_tile_loadd(int t, const void *base, long stride)
{
    sw_emu_tile_valid("tileloadd", t);
    sw_emu_tiles *s = sw_emu_here();
    memset(s->data[t], 0, sizeof s->data[t]);
    for (int r = 0; r < s->rows[t]; r++)
        memcpy(s->data[t][r], (const char *)base + (long)r * stride, s->colsb[t]);
}

static inline void sw_emu_tile_stored(int t, void *base, long stride)
{
    sw_emu_tile_valid("tilestored", t);
    const sw_emu_tiles *s = sw_emu_here();
    for (int r = 0; r < s->rows[t]; r++)
        memcpy((char *)base + (long)r * stride, s->data[t][r], s->colsb[t]);
}

/* The shape rules every TDP* instruction checks before it runs. */
static inline void sw_emu_tile_dp_shapes(const char *insn, int c, int a, int b)
{
    sw_emu_tile_valid(insn, c);
    sw_emu_tile_valid(insn, a);
    sw_emu_tile_valid(insn, b);
    const sw_emu_tiles *s = sw_emu_here();
    if (c == a || c == b || a == b)
        sw_emu_tile_fault(insn, "the three tiles must differ");
    if (s->colsb[c] % 4 || s->colsb[a] % 4 || s->colsb[b] % 4)
        sw_emu_tile_fault(insn, "colsb not a multiple of 4");
    if (s->rows[c] != s->rows[a])
        sw_emu_tile_fault(insn, "dest rows differ from src1 rows");
    if (s->colsb[a] / 4 != s->rows[b])
        sw_emu_tile_fault(insn, "src1 colsb / 4 differs from src2 rows");
    if (s->colsb[c] != s->colsb[b])
        sw_emu_tile_fault(insn, "dest colsb differs from src2 colsb");
}

/* dest.int32[m][n] += sum over k of four byte products, modulo 2^32. */
static inline void sw_emu_tile_dpb(const char *insn, int c, int a, int b, int a_signed,
                                   int b_signed)
{
    sw_emu_tile_dp_shapes(insn, c, a, b);
    sw_emu_tiles *s = sw_emu_here();
    int rows = s->rows[c], n_out = s->colsb[c] / 4, n_k = s->colsb[a] / 4;
    for (int m = 0; m < rows; m++)
        for (int n = 0; n < n_out; n++) {
            uint32_t acc;
            memcpy(&acc, &s->data[c][m][4 * n], 4);
            for (int k = 0; k < n_k; k++)
                for (int i = 0; i < 4; i++) {
                    uint8_t x = s->data[a][m][4 * k + i], y = s->data[b][k][4 * n + i];
                    int32_t xv = a_signed ? (int32_t)(int8_t)x : (int32_t)x;
                    int32_t yv = b_signed ? (int32_t)(int8_t)y : (int32_t)y;
                    acc += (uint32_t)(xv * yv); /* |product| < 2^16: no overflow */
                }
            memcpy(&s->data[c][m][4 * n], &acc, 4);
        }
}

static inline void sw_emu_tile_dpbssd(int c, int a, int b)
{
    sw_emu_tile_dpb("tdpbssd", c, a, b, 1, 1);
}

static inline void sw_emu_tile_dpbsud(int c, int a, int b)
{
    sw_emu_tile_dpb("tdpbsud", c, a, b, 1, 0);
}

static inline void sw_emu_tile_dpbusd(int c, int a, int b)
{
    sw_emu_tile_dpb("tdpbusd", c, a, b, 0, 1);
}

static inline void sw_emu_tile_dpbuud(int c, int a, int b)
{
    sw_emu_tile_dpb("tdpbuud", c, a, b, 0, 0);
}

/* Denormals to a zero of the same sign: DAZ on inputs, FTZ on results. */
static inline float sw_emu_flush(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0)
        u &= 0x80000000u;
    memcpy(&x, &u, 4);
    return x;
}

/* A bf16 (the top half of an fp32) as an fp32, DAZ applied. */
static inline float sw_emu_bf16(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return sw_emu_flush(x);
}

static inline void sw_emu_tile_dpbf16ps(int c, int a, int b)
{
    sw_emu_tile_dp_shapes("tdpbf16ps", c, a, b);
    sw_emu_tiles *s = sw_emu_here();
    int rows = s->rows[c], n_out = s->colsb[c] / 4, n_k = s->colsb[a] / 4;
    for (int m = 0; m < rows; m++) {
        float even[16] = {0}, odd[16] = {0};
        for (int k = 0; k < n_k; k++)
            for (int n = 0; n < n_out; n++) {
                const uint8_t *x = &s->data[a][m][4 * k], *y = &s->data[b][k][4 * n];
                even[n] = sw_emu_flush(fmaf(sw_emu_bf16(x), sw_emu_bf16(y), even[n]));
                odd[n] = sw_emu_flush(fmaf(sw_emu_bf16(x + 2), sw_emu_bf16(y + 2), odd[n]));
            }
        for (int n = 0; n < n_out; n++) {
            float d;
            memcpy(&d, &s->data[c][m][4 * n], 4);
            float pair = sw_emu_flush(even[n] + odd[n]);
            d = sw_emu_flush(sw_emu_flush(d) + pair);
            memcpy(&s->data[c][m][4 * n], &d, 4);
        }
    }
}

#endif
