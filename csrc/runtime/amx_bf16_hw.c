/* The AMX-BF16 kernel on the real instructions: the same source as the
 * emulated build (amx_bf16_body.h); a stub where the compiler has no AMX. */
#include "bf16_gemm.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 &&           \
    !defined(__SANITIZE_ADDRESS__)
#define SW_AMX_HARDWARE 1
#include "amx_tile_ops.h"

#define SW_AMX_BF16_NAME sw_amx_bf16_block_hw
#define SW_AMX_BF16_LINKAGE                                                                        \
    __attribute__((target("amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl")))
#include "amx_bf16_body.h"
#else
void sw_amx_bf16_block_hw(int m, int kp, const uint16_t *a, const uint16_t *w0, const uint16_t *w1,
                          int cols, float alpha, float beta, float *c, int ldc)
{
    abort(); /* never chosen: sw_amx_built() is 0 */
}
#endif
