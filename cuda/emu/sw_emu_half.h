/* __half and __nv_bfloat16 for the emulated build: 16-bit storage with the
 * conversions of elementwise_math.h (round to nearest even), the same the
 * CPU backend uses, and float arithmetic as a GPU does it without the
 * half-precision ALUs. */
#ifndef SW_EMU_HALF_H
#define SW_EMU_HALF_H

#include "elementwise_math.h"

struct __half {
    uint16_t bits;
};
struct __nv_bfloat16 {
    uint16_t bits;
};
typedef struct __half half;

static inline __half __float2half(float f)
{
    return __half{sw_f32_to_f16(f)};
}
static inline __half __float2half_rn(float f)
{
    return __float2half(f);
}
static inline float __half2float(__half h)
{
    return sw_f16_to_f32(h.bits);
}
static inline __nv_bfloat16 __float2bfloat16(float f)
{
    return __nv_bfloat16{sw_f32_to_bf16(f)};
}
static inline __nv_bfloat16 __float2bfloat16_rn(float f)
{
    return __float2bfloat16(f);
}
static inline float __bfloat162float(__nv_bfloat16 h)
{
    return sw_bf16_to_f32(h.bits);
}
static inline __half __hadd(__half a, __half b)
{
    return __float2half(__half2float(a) + __half2float(b));
}
static inline __half __hmul(__half a, __half b)
{
    return __float2half(__half2float(a) * __half2float(b));
}

#endif
