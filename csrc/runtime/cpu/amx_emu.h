/* Intel AMX's tile instructions in plain C, for CPUs without them (every
 * AMD, every Intel before Sapphire Rapids, CI): the tile kernels
 * (amx_q8_body.h, amx_bf16_body.h) are written against amx_tile_ops.h, which
 * maps each operation to the real instruction or to these functions, so one
 * kernel source runs in both and the emulated run checks the real one's
 * arithmetic.
 *
 * Semantics follow the pseudocode of Intel's SDM (vol. 2, TDPBSSD/TDPBSUD/
 * TDPBUSD/TDPBUUD, TDPBF16PS, TILELOADD, TILESTORED, LDTILECFG):
 *   - byte products: four sign- or zero-extended products added to the int32
 *     accumulator with wrap-around (modulo 2^32, never saturating);
 *   - TDPBF16PS: per output, an even-lane and an odd-lane fp32 partial sum
 *     start at 0 for each instruction, take one fused multiply-add per bf16
 *     pair in k order, then dest += (even + odd); every step rounds to
 *     nearest even whatever MXCSR says, inputs that are denormal count as
 *     zero (DAZ) and denormal results become zero (FTZ);
 *   - loads zero the columns past a tile's colsb and the rows past its rows;
 *     LDTILECFG zeroes every tile.
 * A use the hardware would refuse with #UD (an unconfigured tile, shapes that
 * do not chain, a tile named twice) aborts with a message instead: that is
 * a bug in the kernel, found here before a real CPU would fault on it.
 * The state is per thread, as the hardware's is. NaN payloads are not
 * modelled (the kernels never feed NaNs). */
#ifndef SW_AMX_EMU_H
#define SW_AMX_EMU_H

#include <stdint.h>

/* LDTILECFG's 64-byte memory format, palette 1: 8 tiles of up to 16 rows
 * of up to 64 bytes. */
typedef struct sw_tile_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} sw_tile_config;

#define SW_TILES         8
#define SW_TILE_ROWS     16
#define SW_TILE_ROWBYTES 64

/* The tiles of the calling thread. */
typedef struct sw_emu_tiles {
    int configured;
    uint8_t rows[SW_TILES];
    uint16_t colsb[SW_TILES];
    uint8_t data[SW_TILES][SW_TILE_ROWS][SW_TILE_ROWBYTES];
} sw_emu_tiles;

/* The calling thread's tiles. A function, not the thread-local variable
 * itself: GCC 12's UBSan took the variable's address, inlined into the
 * multi-versioned kernels, for a null pointer. */
sw_emu_tiles *sw_emu_here(void);

/* What would be #UD on the hardware: says which rule, then aborts. */
_Noreturn void sw_emu_tile_fault(const char *instruction, const char *why);

/* The implementations are inline (amx_emu_ops.h) so that each CPU level's
 * build of an emulated kernel compiles them too: the checks at every level
 * then cover the emulator's own arithmetic (fmaf is an instruction at v3
 * and v4, libm's correctly rounded routine at the baseline). */
#include "amx_emu_ops.h"

#endif
