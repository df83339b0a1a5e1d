#include "amx.h"

#include "bf16_gemm.h"
#include "cpu_dispatch.h"
#include "elementwise_math.h"
#include "q8_gemm.h"
#include "q8_pack_layout.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define SW_AMX_X86 1
#endif

/* Read once (probe): what the hardware passed, and why not where it did not. */
static pthread_once_t probed = PTHREAD_ONCE_INIT;
static int hw_int8, hw_bf16, bf16_exact, emulate;
static char why_not[160];
static atomic_int forced = -1;

#ifdef SW_AMX_X86
/* CPUID leaf 7: EDX bit 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8. XCR0 bits 17
 * and 18 (the tile configuration and data) say the OS saves the tile state. */
static void cpu_features(int *tile, int *int8, int *bf16, int *os_state)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    *tile = *int8 = *bf16 = *os_state = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return;
    *bf16 = (d >> 22) & 1;
    *tile = (d >> 24) & 1;
    *int8 = (d >> 25) & 1;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
        return;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    *os_state = (lo & (3u << 17)) == (3u << 17);
}

/* Linux 5.16+: a process asks for the tile data state before its first tile
 * instruction, or that instruction faults. The grant is for the process. */
static int request_tile_state(void)
{
    const long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
}
#endif

/* Bytes in [-127, 127] and scales from a fixed generator. */
static unsigned next(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* The hardware int8 kernel against the portable loop on a product with two
 * row halves, an odd block and k past the last whole tile: the same bits or
 * the tiles are not trusted. */
static int int8_self_check(void)
{
    enum { M = 21, N = 48, K = 136 };
    static int8_t qa[M * K], qw[N * K], packed[N * K];
    static float sa[M], sw[N], want[M * N], got[M * N];
    unsigned s = 2024u;
    for (int i = 0; i < M * K; i++)
        qa[i] = (int8_t)((int)(next(&s) % 255) - 127);
    for (int i = 0; i < N * K; i++)
        qw[i] = (int8_t)((int)(next(&s) % 255) - 127);
    for (int i = 0; i < M; i++)
        sa[i] = 0.5f + (float)(next(&s) % 1000) / 1000.0f;
    for (int i = 0; i < N; i++)
        sw[i] = 1.0f + (float)(next(&s) % 1000) / 500.0f;
    for (int i = 0; i < M * N; i++)
        want[i] = got[i] = (float)(next(&s) % 200) / 100.0f - 1.0f;
    sw_q8_pack_blocks(qw, N, K, 0, N / 16, packed);
    sw_q8_gemm_nt_scalar(M, 0, N, K, qa, sa, qw, sw, 0.5f, want, N);
    sw_amx_q8_gemm_packed_hw(M, 0, N / 16, K, qa, sa, packed, sw, 0.5f, got, N);
    return memcmp(want, got, sizeof want) == 0;
}

/* The hardware bf16 kernel against the emulated one (Intel's pseudocode):
 * trusted when every output is within float32 rounding of it (1e-5 of the
 * sum of the products' magnitudes: a wrong layout or a lost step is off by
 * whole products); bf16_exact records whether the bits were the same, which
 * says whether this CPU sums as the SDM's pseudocode does. */
static int bf16_self_check(void)
{
    enum { M = 20, N = 32, K = 100, KP = 128 };
    static uint16_t a[M * KP], w[N * K], pack[32 * KP];
    static float got[M * N], want[M * N], mag[M * N];
    unsigned s = 1234u;
    memset(a, 0, sizeof a);
    for (int r = 0; r < M; r++)
        for (int i = 0; i < K; i++) {
            float v = (float)(next(&s) % 2001) / 1000.0f - 1.0f;
            a[r * KP + i] = sw_f32_to_bf16(v);
        }
    for (int i = 0; i < N * K; i++)
        w[i] = sw_f32_to_bf16((float)(next(&s) % 2001) / 1000.0f - 1.0f);
    for (int r = 0; r < M; r++)
        for (int j = 0; j < N; j++) {
            double t = 0.0;
            for (int i = 0; i < K; i++)
                t += fabs((double)sw_bf16_to_f32(a[r * KP + i]) * sw_bf16_to_f32(w[j * K + i]));
            mag[r * N + j] = (float)t;
        }
    sw_bf16_pack_block(w, N, K, 0, KP, pack);
    sw_bf16_pack_block(w, N, K, 16, KP, pack + 16 * KP);
    sw_amx_bf16_block_emu(M, KP, a, pack, pack + 16 * KP, N, 1.0f, 0.0f, want, N);
    sw_amx_bf16_block_hw(M, KP, a, pack, pack + 16 * KP, N, 1.0f, 0.0f, got, N);
    int close = 1;
    for (int i = 0; i < M * N; i++)
        close &= fabsf(got[i] - want[i]) <= 1e-5f * mag[i];
    bf16_exact = memcmp(got, want, sizeof got) == 0;
    return close;
}

static void probe(void)
{
    const char *e = getenv("SAYWHO_AMX_EMULATE");
    emulate = e && strcmp(e, "1") == 0;
#ifdef SW_AMX_X86
    int tile, int8, bf16, os_state;
    cpu_features(&tile, &int8, &bf16, &os_state);
    if (!tile || !int8) {
        snprintf(why_not, sizeof why_not, "this CPU has no AMX");
        return;
    }
    if (!sw_amx_built()) {
        snprintf(why_not, sizeof why_not,
                 "built without the AMX kernels (a compiler other than GCC, or AddressSanitizer)");
        return;
    }
    if (!os_state || !request_tile_state()) {
        snprintf(why_not, sizeof why_not,
                 "the OS refused the tile state (arch_prctl ARCH_REQ_XCOMP_PERM needs Linux "
                 "5.16 or later)");
        return;
    }
    hw_int8 = int8_self_check();
    if (!hw_int8) {
        snprintf(why_not, sizeof why_not,
                 "AMX-INT8 failed its self-check (other bits than the reference): not used");
        return;
    }
    hw_bf16 = bf16 && bf16_self_check();
    if (bf16 && !hw_bf16)
        snprintf(why_not, sizeof why_not,
                 "AMX-BF16 failed its self-check (far from the emulation): not used");
#else
    snprintf(why_not, sizeof why_not, "not an x86-64 build");
#endif
}

/* The hardware tiles run where the CPU passed its self-check and the level
 * was not lowered below x86-64-v4 (sw_cpu_level_force, or the variable);
 * the emulated ones run wherever a test asks for them, at whatever level
 * the vector code runs: emulation is not a dispatch level. */
static sw_amx_path choose(int hardware_ok)
{
    if (!sw_cpu_tiles_wanted())
        return SW_AMX_NONE;
    pthread_once(&probed, probe);
    int hw = hardware_ok && sw_cpu_level_get() == SW_CPU_V4;
    int f = atomic_load(&forced);
    if (f >= 0)
        return f == SW_AMX_HARDWARE && !hw ? SW_AMX_NONE : (sw_amx_path)f;
    if (emulate)
        return SW_AMX_EMULATED;
    return hw ? SW_AMX_HARDWARE : SW_AMX_NONE;
}

sw_amx_path sw_amx_int8_path(void)
{
    pthread_once(&probed, probe);
    return choose(hw_int8);
}

sw_amx_path sw_amx_bf16_path(void)
{
    pthread_once(&probed, probe);
    return choose(hw_bf16);
}

const char *sw_amx_describe(void)
{
    static char line[200];
    pthread_once(&probed, probe);
    if (!sw_cpu_tiles_wanted()) {
        snprintf(line, sizeof line, "off: SAYWHO_CPU_DISPATCH=%s asks for vector kernels only",
                 getenv("SAYWHO_CPU_DISPATCH"));
        return line;
    }
    sw_amx_path p = sw_amx_int8_path();
    if (p == SW_AMX_EMULATED)
        return "emulated AMX-INT8 and AMX-BF16 (SAYWHO_AMX_EMULATE=1)";
    if (p == SW_AMX_HARDWARE) {
        snprintf(line, sizeof line, "AMX-INT8%s, self-checked", hw_bf16 ? " and AMX-BF16" : "");
        return line;
    }
    if (hw_int8) {
        snprintf(line, sizeof line, "off: the kernels run at %s, below the tiles' level",
                 sw_cpu_level_name(sw_cpu_level_get()));
        return line;
    }
    snprintf(line, sizeof line, "none: %s", why_not);
    return line;
}

void sw_amx_force(int path)
{
    atomic_store(&forced, path);
}

void sw_amx_q8_gemm_packed(sw_amx_path path, int m, int b0, int b1, int k, const int8_t *qa,
                           const float *sa, const int8_t *qw, const float *sw, float beta, float *c,
                           int ldc)
{
    if (path == SW_AMX_HARDWARE)
        sw_amx_q8_gemm_packed_hw(m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc);
    else
        sw_amx_q8_gemm_packed_emu(m, b0, b1, k, qa, sa, qw, sw, beta, c, ldc);
}
