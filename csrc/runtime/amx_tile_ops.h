/* The tile operations a kernel is written with, mapped to Intel AMX's
 * instructions (a file that defines SW_AMX_HARDWARE before including this,
 * compiled for amx-tile, amx-int8 and amx-bf16) or to their emulation
 * (amx_emu.h), so one kernel source serves both: the emulated build runs in
 * CI on any x86-64 and is compared with the reference products; the
 * hardware build is what an AMX CPU runs, after a self-check (amx.c).
 * Tile numbers must be constants (the instructions encode them). */
#ifndef SW_AMX_TILE_OPS_H
#define SW_AMX_TILE_OPS_H

#include "amx_emu.h" /* sw_tile_config, both ways */

#if defined(SW_AMX_HARDWARE)
#include <immintrin.h>
#define SW_TILE_CONFIG(cfg)       _tile_loadconfig(cfg)
#define SW_TILE_RELEASE()         _tile_release()
#define SW_TILE_ZERO(t)           _tile_zero(t)
#define SW_TILE_LOAD(t, p, s)     _tile_loadd(t, p, (long)(s))
#define SW_TILE_STORE(t, p, s)    _tile_stored(t, p, (long)(s))
#define SW_TILE_DPBSSD(c, a, b)   _tile_dpbssd(c, a, b)
#define SW_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#else
#define SW_TILE_CONFIG(cfg)       sw_emu_tile_loadconfig(cfg)
#define SW_TILE_RELEASE()         sw_emu_tile_release()
#define SW_TILE_ZERO(t)           sw_emu_tile_zero(t)
#define SW_TILE_LOAD(t, p, s)     sw_emu_tile_loadd(t, p, (long)(s))
#define SW_TILE_STORE(t, p, s)    sw_emu_tile_stored(t, p, (long)(s))
#define SW_TILE_DPBSSD(c, a, b)   sw_emu_tile_dpbssd(c, a, b)
#define SW_TILE_DPBF16PS(c, a, b) sw_emu_tile_dpbf16ps(c, a, b)
#endif

/* Sets tile t to rows x colsb bytes in a palette-1 configuration. */
static inline void sw_tile_shape(sw_tile_config *cfg, int t, int rows, int colsb)
{
    cfg->palette = 1;
    cfg->rows[t] = (uint8_t)rows;
    cfg->colsb[t] = (uint16_t)(rows ? colsb : 0);
}

#endif
