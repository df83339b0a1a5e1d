/* sw_widen_to_f32 (the load path's widening) against the scalar reference
 * conversions, over every half and bfloat16 bit pattern, read from an odd
 * address as a memory-mapped checkpoint may give them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_dispatch.h"
#include "elementwise_math.h"
#include "widen.h"

/* Every 16-bit pattern in order (wrapping after 65,535) from raw + 1, an
 * odd address on purpose, and room for n floats; 0 when memory ran out. */
static int patterns(size_t n, unsigned char **raw, float **out)
{
    *raw = malloc(2 * n + 1);
    *out = malloc(n * sizeof **out);
    CHECK(*raw && *out);
    if (!*raw || !*out) {
        free(*raw);
        free(*out);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)i;
        memcpy(*raw + 1 + 2 * i, &h, sizeof h);
    }
    return 1;
}

static void check_all_patterns(sw_dtype dtype)
{
    size_t n = 65536;
    unsigned char *raw;
    float *out;
    if (!patterns(n, &raw, &out))
        return;
    CHECK(sw_widen_to_f32(raw + 1, dtype, out, n) == 0);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float want = dtype == SW_F16 ? sw_f16_to_f32((uint16_t)i) : sw_bf16_to_f32((uint16_t)i);
        if (sw_f32_bits(out[i]) != sw_f32_bits(want)) {
            if (!wrong)
                fprintf(stderr, "%s pattern 0x%04zx: got 0x%08x, want 0x%08x\n",
                        sw_dtype_name(dtype), i, sw_f32_bits(out[i]), sw_f32_bits(want));
            wrong++;
        }
    }
    CHECK(wrong == 0);
    free(raw);
    free(out);
}

static void check_f32_and_bad_type(void)
{
    float src[5] = {1.5f, -0.0f, 3e-40f, 65504.0f, -7.25f}, dst[5] = {0};
    CHECK(sw_widen_to_f32(src, SW_F32, dst, 5) == 0);
    CHECK(memcmp(src, dst, sizeof src) == 0);
    float keep[2] = {42.0f, 43.0f};
    int32_t ints[2] = {1, 2};
    CHECK(sw_widen_to_f32(ints, SW_I32, keep, 2) == -1);
    CHECK(keep[0] == 42.0f && keep[1] == 43.0f);
}

/* sw_widen_f16_fast (the products' widening of float16 weights) at every
 * dispatch level: every half as the reference gives it, except that a
 * signalling NaN may come out quiet (still a NaN). Odd address, and counts
 * that leave a tail for the portable loop. */
static void check_fast_halves(void)
{
    size_t n = 65536 + 5;
    unsigned char *raw;
    float *out;
    if (!patterns(n, &raw, &out))
        return;
    const int levels[3] = {SW_CPU_V4, SW_CPU_V3, SW_CPU_BASELINE};
    for (int l = 0; l < 3; l++) {
        sw_cpu_level_force(levels[l]);
        sw_widen_f16_fast(raw + 1, out, n);
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) {
            float want = sw_f16_to_f32((uint16_t)i);
            int same =
                sw_f32_bits(out[i]) == sw_f32_bits(want) || (want != want && out[i] != out[i]);
            wrong += !same;
        }
        CHECK(wrong == 0);
    }
    sw_cpu_level_force(-1);
    free(raw);
    free(out);
}

int main(void)
{
    check_fast_halves();
    check_all_patterns(SW_F16);
    check_all_patterns(SW_BF16);
    check_f32_and_bad_type();
    return sw_check_summary("test_widen");
}
