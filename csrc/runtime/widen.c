/* Branch-free widening (widen.h). sw_f16_to_f32 picks its case with branches,
 * which keeps the compiler from vectorising a loop over it: at about 3 ns a
 * value that was most of a model's load time. Here every case is computed and
 * one selected, so the loop runs on whole vectors (SSE2 is enough). */
#include "widen.h"

#include "cpu_dispatch.h"

#include <stdint.h>
#include <string.h>

#ifdef SW_MULTIVERSION
#include <immintrin.h>
#endif

static inline uint32_t half_bits_to_float_bits(uint32_t h)
{
    uint32_t magnitude = h & 0x7fffu, exponent = magnitude >> 10;
    /* a normal half: exponent rebiased from 15 to 127, mantissa moved up */
    uint32_t normal = (magnitude << 13) + (112u << 23);
    /* infinity or NaN: exponent 31 becomes 255, the payload kept */
    uint32_t special = normal + (112u << 23);
    /* zero or subnormal: mantissa * 2^-24, exact (and normal) in float, so
     * flush-to-zero modes cannot touch it */
    float small = (float)(int32_t)(magnitude & 0x3ffu) * 5.9604644775390625e-08f;
    uint32_t small_bits;
    memcpy(&small_bits, &small, sizeof small_bits);
    /* all-ones masks, not branches, pick the case */
    uint32_t is_small = 0u - (uint32_t)(exponent == 0),
             is_special = 0u - (uint32_t)(exponent == 31);
    uint32_t bits =
        (small_bits & is_small) | (special & is_special) | (normal & ~(is_small | is_special));
    return bits | (h & 0x8000u) << 16;
}

/* memcpy in and out: any alignment, no aliasing; compilers make plain
 * vector loads and stores of them */
static void widen_f16(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, sizeof h);
        uint32_t bits = half_bits_to_float_bits(h);
        memcpy(dst + i, &bits, sizeof bits);
    }
}

static void widen_bf16(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, sizeof h);
        uint32_t bits = (uint32_t)h << 16;
        memcpy(dst + i, &bits, sizeof bits);
    }
}

int sw_widen_to_f32(const void *src, sw_dtype dtype, float *dst, size_t n)
{
    if (dtype == SW_F16)
        widen_f16(src, dst, n);
    else if (dtype == SW_BF16)
        widen_bf16(src, dst, n);
    else if (dtype == SW_F32)
        memcpy(dst, src, n * sizeof *dst);
    else
        return -1;
    return 0;
}

#ifdef SW_MULTIVERSION
/* 8 halves per instruction; the tail through the portable loop */
SW_TARGET_V3 static void widen_f16_f16c(const unsigned char *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                      (const __m128i *)(const void *)(src + 2 * i))));
    widen_f16(src + 2 * i, dst + i, n - i);
}
#endif

void sw_widen_f16_fast(const void *src, float *dst, size_t n)
{
#ifdef SW_MULTIVERSION
    if (sw_cpu_level_get() >= SW_CPU_V3) {
        widen_f16_f16c(src, dst, n);
        return;
    }
#endif
    widen_f16(src, dst, n);
}
