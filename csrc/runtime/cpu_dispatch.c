#include "cpu_dispatch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && __GNUC__ < 12 && !defined(__clang__)
#include <cpuid.h>

/* GCC 10's __builtin_cpu_supports has no "f16c": CPUID leaf 1, ECX bit 29 */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* -1: not read yet. Races only repeat the same reading. */
static atomic_int hardware = -1, chosen = -1, vnni = -1, tiles = -1;

sw_cpu_level sw_cpu_level_hardware(void)
{
    int h = atomic_load(&hardware);
    if (h < 0) {
        h = SW_CPU_BASELINE;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
#if __GNUC__ >= 12 || defined(__clang__)
        if (__builtin_cpu_supports("x86-64-v4"))
            h = SW_CPU_V4;
        else if (__builtin_cpu_supports("x86-64-v3"))
            h = SW_CPU_V3;
#else /* the features SW_TARGET_V3/V4 compile for (cpu_dispatch.h) */
        int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                 __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                 __builtin_cpu_supports("popcnt") && has_f16c();
        int v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512vl");
        h = v4 ? SW_CPU_V4 : v3 ? SW_CPU_V3 : SW_CPU_BASELINE;
#endif
#endif
        atomic_store(&hardware, h);
    }
    return (sw_cpu_level)h;
}

int sw_cpu_dispatch_parse(const char *value, int *lets_tiles)
{
    int level = -1, amx = 0;
    if (!value || !*value || strcmp(value, "auto") == 0 || strcmp(value, "amx") == 0) {
        level = SW_CPU_V4;
        amx = 1;
    } else if (strcmp(value, "avx512") == 0 || strcmp(value, "x86-64-v4") == 0) {
        level = SW_CPU_V4;
    } else if (strcmp(value, "avx2") == 0 || strcmp(value, "x86-64-v3") == 0) {
        level = SW_CPU_V3;
    } else if (strcmp(value, "baseline") == 0 || strcmp(value, "x86-64") == 0) {
        level = SW_CPU_BASELINE;
    }
    if (lets_tiles)
        *lets_tiles = amx;
    return level;
}

/* The level the variable asks for, or -1 when it is not a known value. */
static int requested(void)
{
    return sw_cpu_dispatch_parse(getenv("SAYWHO_CPU_DISPATCH"), NULL);
}

static int clamp(int level)
{
    int h = sw_cpu_level_hardware();
    return level > h ? h : level;
}

sw_cpu_level sw_cpu_level_get(void)
{
    int c = atomic_load(&chosen);
    if (c < 0) {
        int r = requested();
        c = clamp(r < 0 ? SW_CPU_V4 : r); /* an unknown value is refused at open */
        atomic_store(&chosen, c);
    }
    return (sw_cpu_level)c;
}

int sw_cpu_has_vnni(void)
{
    int v = atomic_load(&vnni);
    if (v < 0) {
        v = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
#endif
        atomic_store(&vnni, v);
    }
    return v && sw_cpu_level_get() == SW_CPU_V4;
}

int sw_cpu_tiles_wanted(void)
{
    int t = atomic_load(&tiles);
    if (t < 0) {
        sw_cpu_dispatch_parse(getenv("SAYWHO_CPU_DISPATCH"), &t);
        atomic_store(&tiles, t);
    }
    return t;
}

sw_status sw_cpu_dispatch_check_value(const char *value, sw_error *err)
{
    if (sw_cpu_dispatch_parse(value, NULL) < 0)
        return sw_fail(err, SW_ERR_ARG,
                       "SAYWHO_CPU_DISPATCH=%s is not a dispatch level: use auto, amx, avx512, "
                       "avx2 or baseline (lower case)",
                       value);
    return SW_OK;
}

sw_status sw_cpu_dispatch_check(sw_error *err)
{
    return sw_cpu_dispatch_check_value(getenv("SAYWHO_CPU_DISPATCH"), err);
}

const char *sw_cpu_level_name(sw_cpu_level level)
{
    switch (level) {
    case SW_CPU_V4: return "x86-64-v4";
    case SW_CPU_V3: return "x86-64-v3";
    default: return "x86-64";
    }
}

void sw_cpu_level_force(int level)
{
    atomic_store(&tiles, -1);
    if (level < 0) {
        atomic_store(&chosen, -1);
        return;
    }
    atomic_store(&chosen, clamp(level));
}
