/* float <-> float16 / bfloat16 inside kernels, as the hardware converts
 * (cvt.rn: round to nearest even); the emulator's __half and __nv_bfloat16
 * (cuda/emu/sw_emu_half.h) round the same way. Overloads, so a kernel
 * templated on its storage type reads and writes any of the three. */
#ifndef SW_CUDA_HALF_CONVERT_H
#define SW_CUDA_HALF_CONVERT_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

static __device__ __forceinline__ void sw_store(float v, float *p)
{
    *p = v;
}

static __device__ __forceinline__ void sw_store(float v, __half *p)
{
    *p = __float2half_rn(v);
}

static __device__ __forceinline__ void sw_store(float v, __nv_bfloat16 *p)
{
    *p = __float2bfloat16_rn(v);
}

static __device__ __forceinline__ float sw_load(const float *p)
{
    return *p;
}

static __device__ __forceinline__ float sw_load(const __half *p)
{
    return __half2float(*p);
}

static __device__ __forceinline__ float sw_load(const __nv_bfloat16 *p)
{
    return __bfloat162float(*p);
}

#endif
