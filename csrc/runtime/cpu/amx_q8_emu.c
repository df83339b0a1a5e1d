/* The AMX-INT8 kernel with the tile instructions emulated, built at every CPU
 * level like the other multi-versioned kernels (cpu_dispatch.h). */
#include "amx.h"
#include "amx_tile_ops.h"
#include "cpu_dispatch.h"

#include <string.h>

#define SW_AMX_Q8_NAME    sw_amx_q8_gemm_packed_emu_body
#define SW_AMX_Q8_LINKAGE SW_ALWAYS_INLINE
#include "amx_q8_body.h"

SW_VOID_MULTIVERSION(, sw_amx_q8_gemm_packed_emu,
                     (int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                      const int8_t *qw, const float *sw, float beta, float *c, int ldc),
                     (m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc))
