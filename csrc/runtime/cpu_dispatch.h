/* Which instruction-set level saywho's own CPU kernels run at.
 *
 * Kernels that have AVX-512, AVX2 and baseline builds pick one through
 * sw_cpu_level() instead of GCC's target_clones, whose choice is made by the
 * loader and cannot be overridden: SAYWHO_CPU_DISPATCH lowers the level, so
 * one machine can run (and CI can test) what a CPU without AVX-512 or AVX2
 * would run. It never raises the level above what the CPU has.
 *
 *   SAYWHO_CPU_DISPATCH=auto      the best the CPU has (the default), AMX
 *                                 tiles included where present (amx.h)
 *   SAYWHO_CPU_DISPATCH=amx       the same as auto
 *   SAYWHO_CPU_DISPATCH=avx512    x86-64-v4 without AMX tiles
 *   SAYWHO_CPU_DISPATCH=avx2      x86-64-v3 at most: AVX2 and FMA, no AVX-512
 *   SAYWHO_CPU_DISPATCH=baseline  x86-64 (SSE2): no AVX, no FMA, no VNNI
 *
 * OpenBLAS picks its own kernels when it loads; OPENBLAS_CORETYPE (for
 * example Haswell or Nehalem) forces those. */
#ifndef SW_CPU_DISPATCH_H
#define SW_CPU_DISPATCH_H

#include "status.h"

typedef enum sw_cpu_level {
    SW_CPU_BASELINE = 0, /* x86-64: SSE2 */
    SW_CPU_V3 = 3,       /* x86-64-v3: AVX2, FMA */
    SW_CPU_V4 = 4        /* x86-64-v4: AVX-512 F, BW, CD, DQ, VL */
} sw_cpu_level;

/* The level kernels run at: the CPU's, lowered by SAYWHO_CPU_DISPATCH.
 * Read once; cheap after that. */
sw_cpu_level sw_cpu_level_get(void);

/* AVX-512 VNNI (the int8 kernel): the CPU has it and the level is v4. */
int sw_cpu_has_vnni(void);

/* 1 when SAYWHO_CPU_DISPATCH lets tiles run (unset, auto or amx; avx512,
 * avx2 and baseline ask for vector kernels only). Whether the CPU has them,
 * and whether the emulated ones run on a CPU without them, is amx.h's
 * question: emulation is a test's request, not a dispatch level. */
int sw_cpu_tiles_wanted(void);

/* The CPU's own level, whatever the variable says. */
sw_cpu_level sw_cpu_level_hardware(void);

/* The one reading of SAYWHO_CPU_DISPATCH's spellings: the level `value`
 * asks for (unset or empty is auto), or -1 for a value that is no level;
 * *lets_tiles (when not NULL) is 1 where it lets AMX tiles run (auto, amx).
 * Spellings are exact: lower case, no spaces. Python reads the same
 * function before the core loads (saywho._dispatch, for OpenBLAS's
 * kernels), so both accept and refuse the same values. */
int sw_cpu_dispatch_parse(const char *value, int *lets_tiles);

/* SW_ERR_ARG naming the variable when `value` is no level (the one message);
 * sw_cpu_dispatch_check reads the variable (checked where a CPU backend
 * opens). */
sw_status sw_cpu_dispatch_check_value(const char *value, sw_error *err);
sw_status sw_cpu_dispatch_check(sw_error *err);

/* "x86-64-v4", "x86-64-v3" or "x86-64". */
const char *sw_cpu_level_name(sw_cpu_level level);

/* For tests: run at this level (clamped to the hardware's) from now on;
 * a negative value goes back to what the variable says. */
void sw_cpu_level_force(int level);

/* Multi-versioned kernels: the same body compiled for each level. A body is
 * a static always-inline function, so it is compiled into each version.
 * Where results must not depend on the level, the file is compiled without
 * floating-point contraction (ISO C's default here): the versions differ in
 * speed only. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#if __GNUC__ >= 12
#define SW_TARGET_V4 __attribute__((target("arch=x86-64-v4")))
#define SW_TARGET_V3 __attribute__((target("arch=x86-64-v3")))
#else
/* GCC 10 and 11 (GCC 10 builds the portable wheel, on Debian bullseye) know
 * neither the level names here nor in __builtin_cpu_supports: the levels by
 * the features the kernels use, the same list cpu_dispatch.c checks */
#define SW_TARGET_V4                                                                               \
    __attribute__((target(SW_V3_FEATURES ",avx512f,avx512bw,avx512cd,avx512dq,avx512vl")))
#define SW_TARGET_V3   __attribute__((target(SW_V3_FEATURES)))
#define SW_V3_FEATURES "avx2,fma,f16c,bmi,bmi2,popcnt"
#endif
#define SW_MULTIVERSION 1
#else
#define SW_TARGET_V4
#define SW_TARGET_V3
#endif

#define SW_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Defines name_v4, name_v3 and name_baseline calling name##_body, and
 * name itself, which calls the one sw_cpu_level_get() picks. For functions
 * returning void. */
#define SW_VOID_MULTIVERSION(linkage, name, params, args)                                          \
    SW_TARGET_V4 static void name##_v4 params                                                      \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    SW_TARGET_V3 static void name##_v3 params                                                      \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    static void name##_baseline params                                                             \
    {                                                                                              \
        name##_body args;                                                                          \
    }                                                                                              \
    linkage void name params                                                                       \
    {                                                                                              \
        switch (sw_cpu_level_get()) {                                                              \
        case SW_CPU_V4: name##_v4 args; break;                                                     \
        case SW_CPU_V3: name##_v3 args; break;                                                     \
        default: name##_baseline args;                                                             \
        }                                                                                          \
    }

#endif
