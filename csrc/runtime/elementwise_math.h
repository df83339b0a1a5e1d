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

/* Leaky ReLU as v times 1 or alpha, the factor picked by v's sign bit with
 * integer masks (alpha given by its bits): this vectorises, where `v >= 0 ?
 * v : alpha * v` compiles to a branch that random signs mispredict. Same
 * values (v * 1 is v; -0.0 and NaN included); alpha 0 is the ReLU. */
SW_HD float sw_leaky_relu_bits(float v, uint32_t alpha_bits)
{
    const uint32_t one_bits = 0x3f800000u;
    uint32_t pick = one_bits ^ ((one_bits ^ alpha_bits) & (0u - (sw_f32_bits(v) >> 31)));
    return v * sw_bits_f32(pick);
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

/* Whisper and most transformers use the exact (erf) GELU,
 * x (1 + erf(x / sqrt 2)) / 2. libm's erff is a call per element (and calls
 * expf beyond 0.84): 17% of Whisper's encoder on one core. This erf has no
 * calls or branches, so loops over it vectorise, and CPU and GPU compute it
 * alike. With z = x / sqrt 2 and a = |z|:
 *   a < 0.84375:  erf(z) = z + z R(a^2)              R of degree 6
 *   a >= 0.84375: erf(z) = sign(z) (1 - exp(-a^2) Q(a - 2.4)),  Q of degree 11
 * R and Q were fitted for this file (least squares, reweighted towards the
 * largest relative error): R within 3e-9 relative, Q within 3e-7 in float.
 * Written as z + z R, the near range rounds as a correctly rounded erf
 * would; the GELU is then formed as before, so 95% of values keep libm's
 * bits (Whisper's int8 decoder can turn an ulp into another token at a
 * near tie). Beyond a = 4 erfc is below half a unit of 1.0f and erf is +-1,
 * as with libm; a is clamped there so that exp's argument stays in range. */
SW_HD float sw_erf_f(float z)
{
    /* The choices are masks on the bits: with a float compare or a ternary
     * GCC computes only the value taken, behind a branch, and loops with
     * branches do not vectorise below AVX-512. For non-negative floats (and
     * NaN, above +inf) the bit patterns order as the values do. */
    uint32_t bz = sw_f32_bits(z);
    uint32_t bits_a = bz & 0x7fffffffu;
    uint32_t below_4 = 0u - (uint32_t)(bits_a < 0x40800000u);
    float a = sw_bits_f32(bits_a < 0x40800000u ? bits_a : 0x40800000u); /* NaN: 4 */
    float s = a * a;
    float r = 8.846057608e-05f;
    r = r * s - 8.242307231e-04f;
    r = r * s + 5.208745599e-03f;
    r = r * s - 2.686209790e-02f;
    r = r * s + 1.128373668e-01f;
    r = r * s - 3.761263490e-01f;
    r = r * s + 1.283791661e-01f;
    float erf_near = z + z * r;
    float t = a - 2.4f;
    float q = -5.272060548e-07f;
    q = q * t + 2.325473815e-06f;
    q = q * t - 5.188870546e-06f;
    q = q * t + 1.765349407e-05f;
    q = q * t - 7.328727952e-05f;
    q = q * t + 2.605090849e-04f;
    q = q * t - 8.738830220e-04f;
    q = q * t + 2.865687478e-03f;
    q = q * t - 9.065932594e-03f;
    q = q * t + 2.749456465e-02f;
    q = q * t - 7.958527654e-02f;
    q = q * t + 2.184987217e-01f;
    uint32_t erfc_a = sw_f32_bits(sw_expf_in_range(-s) * q) & below_4; /* 0 from 4 on */
    uint32_t erf_far = sw_f32_bits(1.0f - sw_bits_f32(erfc_a)) | (bz & 0x80000000u);
    uint32_t near = 0u - (uint32_t)(bits_a < 0x3f580000u); /* a < 0.84375 */
    return sw_bits_f32((sw_f32_bits(erf_near) & near) | (erf_far & ~near));
}

SW_HD float sw_gelu_f(float x)
{
    return 0.5f * x * (1.0f + sw_erf_f(x * 0.70710678118654752f));
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
