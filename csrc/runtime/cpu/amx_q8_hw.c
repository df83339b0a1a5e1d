/* The AMX-INT8 kernel on the real instructions: the same source as the
 * emulated build (amx_q8_body.h). GCC builds it (amx_build.h);
 * other compilers build a stub that amx.c never calls. */
#include "amx.h"

#include <stdlib.h>
#include <string.h>

#include "amx_build.h"

#ifdef SW_AMX_CAN_BUILD
#define SW_AMX_HARDWARE 1
#include "amx_tile_ops.h"

#define SW_AMX_Q8_NAME    sw_amx_q8_gemm_packed_hw
#define SW_AMX_Q8_LINKAGE __attribute__((target(SW_AMX_TARGET)))
#include "amx_q8_body.h"

int sw_amx_built(void)
{
    return 1;
}
#else
void sw_amx_q8_gemm_packed_hw(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                              const int8_t *qw, const float *sw, float beta, float *c, int ldc)
{
    abort(); /* never chosen: sw_amx_built() is 0 */
}

int sw_amx_built(void)
{
    return 0;
}
#endif
