/* Intel AMX (the matrix tiles of Xeons since Sapphire Rapids) for saywho's
 * large products: whether this process may use them, the first-use
 * self-check, and the kernels' entry points.
 *
 * The tiles run at the top CPU level only: SAYWHO_CPU_DISPATCH=auto (or amx)
 * uses them where the CPU has them; avx512 keeps to AVX-512 (VNNI) without
 * tiles, and avx2 and baseline lower further. Linux gives a process the
 * tile state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XFEATURE_XTILEDATA, Linux 5.16 and later); a refusal means no tiles. Before
 * the hardware path is trusted, its kernels run once on fixed inputs and must
 * give the reference's bits (int8) or agree with the emulation (bf16);
 * otherwise the tiles stay off and sw_amx_describe() says why.
 *
 * SAYWHO_AMX_EMULATE=1 takes the tile path on any x86-64 with the
 * instructions emulated (amx_emu.h), at whatever level the vector code runs
 * (AVX2-only and baseline too): slow, for tests of the kernels in the whole
 * pipeline on CPUs without AMX. Only a vector level named in
 * SAYWHO_CPU_DISPATCH turns it off. */
#ifndef SW_AMX_H
#define SW_AMX_H

#include <stdint.h>

typedef enum sw_amx_path { SW_AMX_NONE = 0, SW_AMX_HARDWARE = 1, SW_AMX_EMULATED = 2 } sw_amx_path;

/* Products with fewer activation rows stay on the vector kernels: a tile
 * multiply costs the same for 1 row as for 16. A guess until measured on
 * an AMX CPU (docs/amx.md). */
#define SW_AMX_MIN_ROWS 8

/* The path int8 (AMX-INT8) and bfloat16 (AMX-BF16) products take now. */
sw_amx_path sw_amx_int8_path(void);
sw_amx_path sw_amx_bf16_path(void);

/* sw_amx_describe() is declared in cpu_backend.h, for callers outside cpu/. */

/* For tests: take this path from now on (SW_AMX_EMULATED works anywhere;
 * SW_AMX_HARDWARE only where the hardware passed); -1 goes back to what the
 * CPU and the variables say. */
void sw_amx_force(int path);

/* 1 when this build has the hardware kernels (GCC 11 or later on x86-64). */
int sw_amx_built(void);

/* The int8 tile product on packed weights (amx_q8_body.h): c[r, 16 * b0 ...)
 * for r < m, packed blocks [b0, b1), k % 4 == 0, c with row stride ldc. */
void sw_amx_q8_gemm_packed(sw_amx_path path, int m, int b0, int b1, int k, const int8_t *qa,
                           const float *sa, const int8_t *qw, const float *sw, float beta, float *c,
                           int ldc);

/* The two builds, for the tests and the self-check. The emulated one is
 * multi-versioned: it runs at the level sw_cpu_level_get() gives. */
void sw_amx_q8_gemm_packed_emu(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                               const int8_t *qw, const float *sw, float beta, float *c, int ldc);
void sw_amx_q8_gemm_packed_hw(int m, int b0, int b1, int k, const int8_t *qa, const float *sa,
                              const int8_t *qw, const float *sw, float beta, float *c, int ldc);

#endif
