/* The AMX-BF16 kernel with the tile instructions emulated, built at every
 * CPU level (cpu_dispatch.h). */
#include "amx_tile_ops.h"
#include "bf16_gemm.h"
#include "cpu_dispatch.h"

#include <string.h>

#define SW_AMX_BF16_NAME    sw_amx_bf16_block_emu_body
#define SW_AMX_BF16_LINKAGE SW_ALWAYS_INLINE
#include "amx_bf16_body.h"

SW_VOID_MULTIVERSION(, sw_amx_bf16_block_emu,
                     (int m, int kp, const uint16_t *a, const uint16_t *w0, const uint16_t *w1,
                      int cols, float alpha, float beta, float *c, int ldc),
                     (m, kp, a, w0, w1, cols, alpha, beta, c, ldc))
