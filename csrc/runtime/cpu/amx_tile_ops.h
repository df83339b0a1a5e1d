/* The tile operations a kernel is written with, mapped to Intel AMX's
 * instructions (a file that defines SW_AMX_HARDWARE before including this,
 * compiled for amx-tile, amx-int8 and amx-bf16) or to their emulation
 * (amx_emu.h), so one kernel source serves both: the emulated build runs in
 * CI on any x86-64 and is compared with the reference products; the
 * hardware build is what an AMX CPU runs, after a self-check (amx.c).
 * Tile numbers must be constants (the instructions encode them). */
#ifndef SW_AMX_TILE_OPS_H
#define SW_AMX_TILE_OPS_H

#include <string.h>

#include "amx_build.h"
#include "amx_emu.h" /* sw_tile_config, both ways */

#if defined(SW_AMX_HARDWARE) && SW_AMX_INTRINSICS
#include <immintrin.h>
#define SW_TILE_CONFIG(cfg)       _tile_loadconfig(cfg)
#define SW_TILE_RELEASE()         _tile_release()
#define SW_TILE_ZERO(t)           _tile_zero(t)
#define SW_TILE_LOAD(t, p, s)     _tile_loadd(t, p, (long)(s))
#define SW_TILE_STORE(t, p, s)    _tile_stored(t, p, (long)(s))
#define SW_TILE_DPBSSD(c, a, b)   _tile_dpbssd(c, a, b)
#define SW_TILE_DPBF16PS(c, a, b) _tile_dpbf16ps(c, a, b)
#elif defined(SW_AMX_HARDWARE)
/* GCC 10 (the portable wheel's, on Debian bullseye for glibc 2.31) has no AMX
 * intrinsics and its assembler no AMX mnemonics, so the instructions are
 * written as their bytes: VEX prefix C4 E2, then the map-2 opcode and a ModRM
 * byte holding the tile numbers (the tdp* sources' second tile in VEX.vvvv,
 * inverted). Memory operands go through fixed registers, base %rdi and index
 * %rsi (scale 1): ModRM 04|t<<3 with SIB 37. The clobbers keep the compiler
 * from reordering or dropping the plain C reads and writes of the same
 * buffers. tests/test_amx_assembly.py checks these bytes decode to what the
 * intrinsics build emits. */
#define SW_TILE_CONFIG(cfg)                                                                        \
    __asm__ volatile(".byte 0xc4, 0xe2, 0x78, 0x49, 0x07" ::"D"(cfg) : "memory")
#define SW_TILE_RELEASE() __asm__ volatile(".byte 0xc4, 0xe2, 0x78, 0x49, 0xc0" ::: "memory")
#define SW_TILE_ZERO(t)   __asm__ volatile(".byte 0xc4, 0xe2, 0x7b, 0x49, 0xc0 | (" #t " << 3)")
#define SW_TILE_LOAD(t, p, s)                                                                      \
    __asm__ volatile(".byte 0xc4, 0xe2, 0x7b, 0x4b, 0x04 | (" #t " << 3), 0x37" ::"D"(p),          \
                     "S"((long)(s))                                                                \
                     : "memory")
#define SW_TILE_STORE(t, p, s)                                                                     \
    __asm__ volatile(".byte 0xc4, 0xe2, 0x7a, 0x4b, 0x04 | (" #t " << 3), 0x37" ::"D"(p),          \
                     "S"((long)(s))                                                                \
                     : "memory")
/* c += a.b; VEX byte 3: vvvv = ~b, pp = F2 (tdpbssd) or F3 (tdpbf16ps) */
#define SW_TILE_DPBSSD(c, a, b)                                                                    \
    __asm__ volatile(".byte 0xc4, 0xe2, ((~" #b " & 15) << 3) | 3, 0x5e, 0xc0 | (" #c              \
                     " << 3) | " #a)
#define SW_TILE_DPBF16PS(c, a, b)                                                                  \
    __asm__ volatile(".byte 0xc4, 0xe2, ((~" #b " & 15) << 3) | 2, 0x5c, 0xc0 | (" #c              \
                     " << 3) | " #a)
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

/* The layout both products (amx_bf16_body.h, amx_q8_body.h) load for a group
 * of up to 32 activation rows, `top` in the first half and `bottom` in the
 * second: tiles 0-3 the sums of the two halves x two weight blocks, 4-5 the
 * halves' activations, 6-7 the blocks' 16 weight rows, 64 bytes a row each.
 * Loading it (SW_TILE_CONFIG) zeroes every tile. */
static inline void sw_tile_halves_by_blocks(sw_tile_config *cfg, int top, int bottom)
{
    memset(cfg, 0, sizeof *cfg);
    sw_tile_shape(cfg, 0, top, 64);
    sw_tile_shape(cfg, 1, top, 64);
    sw_tile_shape(cfg, 2, bottom, 64);
    sw_tile_shape(cfg, 3, bottom, 64);
    sw_tile_shape(cfg, 4, top, 64);
    sw_tile_shape(cfg, 5, bottom, 64);
    sw_tile_shape(cfg, 6, 16, 64);
    sw_tile_shape(cfg, 7, 16, 64);
}

#endif
