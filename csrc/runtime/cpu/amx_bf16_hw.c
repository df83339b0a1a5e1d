/* The AMX-BF16 kernel on the real instructions: the same source as the
 * emulated build (amx_bf16_body.h); a stub where the compiler
 * builds no AMX (amx_build.h). */
#include "bf16_gemm.h"

#include <stdlib.h>
#include <string.h>

#include "amx_build.h"

#ifdef SW_AMX_CAN_BUILD
#define SW_AMX_HARDWARE 1
#include "amx_tile_ops.h"

#define SW_AMX_BF16_NAME    sw_amx_bf16_block_hw
#define SW_AMX_BF16_LINKAGE __attribute__((target(SW_AMX_TARGET)))
#include "amx_bf16_body.h"
#else
void sw_amx_bf16_block_hw(int m, int kp, const uint16_t *a, const uint16_t *w0, const uint16_t *w1,
                          int cols, float alpha, float beta, float *c, int ldc)
{
    abort(); /* never chosen: sw_amx_built() is 0 */
}
#endif
