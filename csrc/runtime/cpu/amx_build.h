/* Whether this compiler builds the AMX kernels on the real instructions, and
 * how: the hardware kernel files (amx_q8_hw.c, amx_bf16_hw.c) read this
 * before they choose between the kernel and a stub. */
#ifndef SW_AMX_BUILD_H
#define SW_AMX_BUILD_H

/* Where the real instructions are built: GCC on x86-64 (not under
 * AddressSanitizer, whose checks the tile loads bypass). GCC 11 and newer
 * through its intrinsics; older GCC as instruction bytes (amx_tile_ops.h). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define SW_AMX_CAN_BUILD 1
#if __GNUC__ >= 11 && !defined(SW_AMX_FORCE_ASM)
#define SW_AMX_INTRINSICS 1
#define SW_AMX_TARGET     "amx-tile,amx-int8,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl"
#else
#define SW_AMX_INTRINSICS 0
#define SW_AMX_TARGET     "avx512f,avx512bw,avx512dq,avx512vl"
#endif
#endif

#endif
