/* Arithmetic shared by the CPU backend and the CUDA kernels, so that the
 * numbers CI checks on the CPU are the numbers a GPU computes. */
#ifndef SW_ELEMENTWISE_MATH_H
#define SW_ELEMENTWISE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SW_HD __host__ __device__ __forceinline__
#else
#define SW_HD static inline
#endif

/* Whisper and most transformers use the exact (erf) GELU. */
SW_HD float sw_gelu_f(float x)
{
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}

SW_HD uint32_t sw_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

SW_HD float sw_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp for x in [-87, 88] (callers clamp): Cephes' polynomial (within 1e-7
 * relative of exp), written without calls or branches so that loops
 * vectorise; libm's expf is a call per element. */
SW_HD float sw_expf_in_range(float x)
{
    float fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = ((int32_t)fn + 127) * 8388608; /* 2^fn as float bits */
    float scale;
    memcpy(&scale, &e, sizeof scale);
    return p * scale;
}

/* exp for the softmax, x <= 0. Below -87 (and for -inf) it gives exp(-87):
 * for a non-positive float a larger magnitude is a larger bit pattern, so an
 * unsigned minimum clamps it. */
SW_HD float sw_expf_nonpositive(float x)
{
    uint32_t bx;
    memcpy(&bx, &x, sizeof bx);
    bx = bx > 0xc2ae0000u ? 0xc2ae0000u : bx; /* -87.0f */
    memcpy(&x, &bx, sizeof x);
    return sw_expf_in_range(x);
}

/* IEEE half <-> float, round to nearest even, with subnormals, inf and NaN. */
SW_HD float sw_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 is exact in float */
        float v = (float)man * 5.9604644775390625e-08f;
        return sw_bits_f32(sw_f32_bits(v) | sign);
    }
    if (exp == 31)
        return sw_bits_f32(sign | 0x7f800000u | (man << 13));
    return sw_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

SW_HD uint16_t sw_f32_to_f16(float f)
{
    uint32_t x = sw_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below the smallest normal half: subnormal */
        /* adding 0.5 shifts the mantissa so the FPU rounds it to nearest even */
        float v = sw_bits_f32(ax) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(sw_f32_bits(v) - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* rebias exponent (-112 << 23) and round */
    return (uint16_t)(sign | (uint16_t)(ax >> 13));
}

SW_HD float sw_bf16_to_f32(uint16_t h)
{
    return sw_bits_f32((uint32_t)h << 16);
}

SW_HD uint16_t sw_f32_to_bf16(float f)
{
    uint32_t x = sw_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

#endif
