/* The emulator's __half and __nv_bfloat16 round as the GPU's cvt.rn does: to
 * nearest, ties to even, overflow to infinity, subnormal halves kept. Checked
 * at every rounding boundary of both types (each representable value, the
 * midpoint to the next one and the floats on either side of that midpoint)
 * against values computed here in double, independently of the conversion
 * code under test. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sw_emu.h"

static int failures, checks;

static void expect(int ok, const char *what, double x, unsigned got, unsigned want)
{
    checks++;
    if (!ok && failures++ < 20)
        fprintf(stderr, "%s(%.9g): 0x%04x, want 0x%04x\n", what, x, got, want);
}

/* float16 bits -> value, from the format's definition */
static double f16_value(unsigned h)
{
    unsigned e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, (int)e - 25);
    return h & 0x8000 ? -v : v;
}

static double bf16_value(unsigned h)
{
    unsigned e = (h >> 7) & 255, m = h & 127;
    double v = e == 0 ? ldexp(m, -133) : ldexp(m + 128, (int)e - 134);
    return h & 0x8000 ? -v : v;
}

static unsigned f16_bits(float f)
{
    return __float2half_rn(f).bits;
}

static unsigned bf16_bits(float f)
{
    return __float2bfloat16_rn(f).bits;
}

/* h and h + 1 are adjacent codes of one sign; `last` is the largest finite
 * code (its successor is infinity). */
template <typename Bits, typename Value>
static void boundaries(const char *name, Bits to_bits, Value value, unsigned last)
{
    for (unsigned h = 0; h <= last; h++) {
        for (unsigned sign = 0; sign <= 0x8000; sign += 0x8000) {
            double lo = value(h), hi = h == last ? 2 * value(h) - value(h - 1) : value(h + 1);
            float mid = (float)((lo + hi) / 2); /* exact: one bit more than the code */
            float s = sign ? -1.0f : 1.0f;
            unsigned even = (h & 1) ? h + 1 : h;
            expect(to_bits(s * (float)lo) == (h | sign), name, s * lo, to_bits(s * (float)lo),
                   h | sign);
            expect(to_bits(s * mid) == (even | sign), name, s * mid, to_bits(s * mid), even | sign);
            float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
            expect(to_bits(s * below) == (h | sign), name, s * below, to_bits(s * below), h | sign);
            expect(to_bits(s * above) == ((h + 1) | sign), name, s * above, to_bits(s * above),
                   (h + 1) | sign);
        }
    }
}

int main(void)
{
    boundaries("__float2half_rn", f16_bits, f16_value, 0x7bffu);
    boundaries("__float2bfloat16_rn", bf16_bits, bf16_value, 0x7f7fu);
    /* the widening conversions are exact; NaN stays NaN, infinity infinity */
    for (unsigned h = 0; h < 0x10000; h++) {
        __half x;
        __nv_bfloat16 y;
        x.bits = y.bits = (uint16_t)h;
        float a = __half2float(x), b = __bfloat162float(y);
        int f16_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff),
            bf16_nan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
        expect(f16_nan ? isnan(a)
                       : (double)a == f16_value(h) || ((h & 0x7fff) == 0x7c00 && isinf(a)),
               "__half2float", h, 0, 0);
        expect(bf16_nan ? isnan(b)
                        : (double)b == bf16_value(h) || ((h & 0x7fff) == 0x7f80 && isinf(b)),
               "__bfloat162float", h, 0, 0);
    }
    expect(isnan(__half2float(__float2half_rn(NAN))), "__float2half_rn", NAN, 0, 0);
    expect(isnan(__bfloat162float(__float2bfloat16_rn(NAN))), "__float2bfloat16_rn", NAN, 0, 0);
    expect(f16_bits(INFINITY) == 0x7c00u, "__float2half_rn", INFINITY, f16_bits(INFINITY), 0x7c00);
    expect(bf16_bits(-INFINITY) == 0xff80u, "__float2bfloat16_rn", -INFINITY, bf16_bits(-INFINITY),
           0xff80);
    printf("emu half rounding: %d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
