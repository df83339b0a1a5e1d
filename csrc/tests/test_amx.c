/* The AMX tile kernels through the emulated instructions, on any x86-64:
 *   - the emulator itself against Intel's pseudocode on cases that tell the
 *     rules apart (int32 wrap-around, signed and unsigned bytes, TDPBF16PS's
 *     even and odd partial sums, DAZ, FTZ, loads that zero what is past the
 *     shape, #UD conditions);
 *   - the AMX-INT8 kernel (the source the hardware runs) at every CPU level
 *     against the portable int8 product, bit for bit, directly and through
 *     the packed product's dispatch;
 *   - the AMX-BF16 kernel at every level against the SDM's arithmetic written
 *     out per output without tiles, bit for bit, and within float32
 *     rounding of the exact product; the CPU backend's bfloat16 product on
 *     the emulated tiles and on its float32 path, close to each other;
 *   - on a CPU with AMX, the hardware kernels the same way. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "amx.h"
#include "amx_tile_ops.h"
#include "bf16_gemm.h"
#include "elementwise_math.h"
#include "check.h"
#include "cpu_dispatch.h"
#include "ops.h"
#include "q8_gemm.h"
#include "q8_packed.h"

static uint8_t rbyte(void)
{
    return (uint8_t)(rand() & 0xff);
}

static int32_t sext(uint8_t x, int is_signed)
{
    return is_signed ? (int32_t)(int8_t)x : (int32_t)x;
}

/* The four byte products, against a loop over the SDM's definition, with
 * the accumulators starting near the int32 limits so the sums wrap. */
static void check_byte_products(void)
{
    enum { R = 5, KB = 40, N = 12 }; /* a 5 x 40-byte A, a 10 x 48-byte B */
    uint8_t a[R][KB], b[KB / 4][N * 4];
    int32_t c0[R][N], c[R][N];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < KB; j++)
            a[i][j] = rbyte();
    for (int i = 0; i < KB / 4; i++)
        for (int j = 0; j < N * 4; j++)
            b[i][j] = rbyte();
    for (int i = 0; i < R; i++)
        for (int j = 0; j < N; j++)
            c0[i][j] = (j % 2) ? INT32_MAX - (int32_t)(rand() % 1000) : INT32_MIN + rand() % 1000;
    sw_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sw_tile_shape(&cfg, 0, R, N * 4);
    sw_tile_shape(&cfg, 1, R, KB);
    sw_tile_shape(&cfg, 2, KB / 4, N * 4);
    for (int kind = 0; kind < 4; kind++) {
        int as = kind == 0 || kind == 1, bs = kind == 0 || kind == 2;
        SW_TILE_CONFIG(&cfg);
        sw_emu_tile_loadd(0, c0, sizeof c0[0]);
        sw_emu_tile_loadd(1, a, sizeof a[0]);
        sw_emu_tile_loadd(2, b, sizeof b[0]);
        switch (kind) {
        case 0: sw_emu_tile_dpbssd(0, 1, 2); break;
        case 1: sw_emu_tile_dpbsud(0, 1, 2); break;
        case 2: sw_emu_tile_dpbusd(0, 1, 2); break;
        default: sw_emu_tile_dpbuud(0, 1, 2);
        }
        sw_emu_tile_stored(0, c, sizeof c[0]);
        int same = 1, wrapped = 0;
        for (int i = 0; i < R; i++)
            for (int j = 0; j < N; j++) {
                int64_t want = c0[i][j];
                for (int k = 0; k < KB; k++)
                    want += (int64_t)sext(a[i][k], as) * sext(b[k / 4][4 * j + k % 4], bs);
                wrapped |= want > INT32_MAX || want < INT32_MIN;
                same &= c[i][j] == (int32_t)(uint32_t)(uint64_t)want;
            }
        CHECK(same);
        CHECK(wrapped); /* the case did reach past the int32 range */
    }
    SW_TILE_RELEASE();
}

/* Loads zero the bytes past colsb and the rows past rows; stores write only
 * the shape. */
static void check_load_store(void)
{
    uint8_t src[16][64], dst[16][64];
    memset(src, 0x5a, sizeof src);
    memset(dst, 0xee, sizeof dst);
    sw_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sw_tile_shape(&cfg, 3, 3, 20);
    SW_TILE_CONFIG(&cfg);
    sw_emu_tile_loadd(3, src, 64);
    CHECK(sw_emu_here()->data[3][2][19] == 0x5a && sw_emu_here()->data[3][2][20] == 0);
    CHECK(sw_emu_here()->data[3][3][0] == 0);
    sw_emu_tile_stored(3, dst, 64);
    CHECK(dst[2][19] == 0x5a && dst[2][20] == 0xee && dst[3][0] == 0xee);
    SW_TILE_RELEASE();
}

static uint16_t bf16_bits(float x) /* x must be exact in bf16 */
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)(u >> 16);
}

/* One 1 x 1 TDPBF16PS over `pairs` bf16 pairs: dest d0, a and b as bits. */
static float dpbf16(float d0, const uint16_t *a, const uint16_t *b, int pairs)
{
    sw_tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    sw_tile_shape(&cfg, 0, 1, 4);
    sw_tile_shape(&cfg, 1, 1, 4 * pairs);
    sw_tile_shape(&cfg, 2, pairs, 4);
    SW_TILE_CONFIG(&cfg);
    sw_emu_tile_loadd(0, &d0, 4);
    sw_emu_tile_loadd(1, a, 4 * pairs);
    sw_emu_tile_loadd(2, b, 4); /* row k of B: the pair (2k, 2k+1) of one column */
    sw_emu_tile_dpbf16ps(0, 1, 2);
    float d;
    sw_emu_tile_stored(0, &d, 4);
    SW_TILE_RELEASE();
    return d;
}

static void check_bf16_rules(void)
{
    uint16_t one = bf16_bits(1.0f), minus = bf16_bits(-1.0f), tiny = bf16_bits(0x1p-30f);
    /* even lanes 1 then -1, odd lane 2^-30 then 0: the SDM sums the lanes
     * apart (0 and 2^-30) and only then adds them, giving 2^-30; one running
     * sum in k order would round 1 + 2^-30 to 1 and end at 0 */
    uint16_t a[4] = {one, tiny, minus, 0}, b[4] = {one, one, one, one};
    CHECK(dpbf16(0.0f, a, b, 2) == 0x1p-30f);
    /* the destination is added last, once: 1 + (2^-24 + 2^-24) is 1 + 2^-23 */
    uint16_t h[2] = {bf16_bits(0x1p-24f), bf16_bits(0x1p-24f)}, o[2] = {one, one};
    CHECK(dpbf16(1.0f, h, o, 1) == 1.0f + 0x1p-23f);
    /* DAZ: a denormal bf16 input counts as zero */
    uint16_t den[2] = {0x0001, 0}, big[2] = {bf16_bits(0x1p100f), 0};
    CHECK(dpbf16(0.0f, den, big, 1) == 0.0f);
    /* FTZ: a product below FLT_MIN becomes zero, not a denormal */
    uint16_t s1[2] = {bf16_bits(0x1p-70f), 0}, s2[2] = {bf16_bits(0x1p-70f), 0};
    float z = dpbf16(0.0f, s1, s2, 1);
    CHECK(z == 0.0f);
    /* round to nearest even on each step: 1 + 3 * 2^-24 rounds up to 1 + 2^-22 */
    uint16_t r1[2] = {bf16_bits(0x1.8p-23f), 0}, r2[2] = {one, 0};
    CHECK(dpbf16(1.0f, r1, r2, 1) == 1.0f + 0x1p-22f);
}

/* A #UD on the hardware is an abort here: a child runs the bad use. */
static void check_faults(void)
{
    for (int kind = 0; kind < 3; kind++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int devnull = open("/dev/null", O_WRONLY);
            if (devnull >= 0)
                dup2(devnull, 2); /* the expected message stays out of the log */
            sw_tile_config cfg;
            memset(&cfg, 0, sizeof cfg);
            sw_tile_shape(&cfg, 0, 4, 64);
            sw_tile_shape(&cfg, 1, 5, 64); /* rows differ from the destination's */
            sw_tile_shape(&cfg, 2, 16, 64);
            if (kind == 0) {
                SW_TILE_CONFIG(&cfg);
                sw_emu_tile_dpbssd(0, 1, 2);
            } else if (kind == 1) {
                sw_emu_tile_zero(0); /* no configuration loaded */
            } else {
                cfg.rows[1] = 17; /* more than 16 rows */
                SW_TILE_CONFIG(&cfg);
            }
            _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    }
}

/* The int8 kernel on random quantized rows: emulated at every level and on
 * the hardware where there is one, directly and through sw_q8_gemm_nt_packed,
 * against sw_q8_gemm_nt_scalar's bits. */
static void check_q8(int m, int n, int k)
{
    int8_t *qa = malloc((size_t)m * k), *qw = malloc((size_t)n * k), *pw = malloc((size_t)n * k);
    float *sa = malloc(sizeof *sa * m), *sw = malloc(sizeof *sw * n);
    float *init = malloc(sizeof(float) * m * n), *want = malloc(sizeof(float) * m * n),
          *got = malloc(sizeof(float) * m * n);
    int32_t *sums = malloc(sizeof *sums * n);
    for (int i = 0; i < m * k; i++)
        qa[i] = (int8_t)(rand() % 255 - 127);
    for (int i = 0; i < n * k; i++)
        qw[i] = (int8_t)(rand() % 255 - 127);
    for (int i = 0; i < m; i++)
        sa[i] = 0.25f + (float)rand() / (float)RAND_MAX;
    for (int i = 0; i < n; i++)
        sw[i] = 1.0f + (float)rand() / (float)RAND_MAX * 3.0f;
    for (int i = 0; i < m * n; i++)
        init[i] = want[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    sw_q8_row_sums(qw, n, k, sums);
    sw_q8_pack_blocks(qw, n, k, 0, (n + 15) / 16, pw);
    sw_q8_gemm_nt_scalar(m, 0, n, k, qa, sa, qw, sw, 1.0f, want, n);
    int blocks = n / 16;
    int levels[3] = {SW_CPU_BASELINE, SW_CPU_V3, SW_CPU_V4};
    for (int i = 0; i < 3 && levels[i] <= (int)sw_cpu_level_hardware(); i++) {
        sw_cpu_level_force(levels[i]);
        /* the kernel alone, whole blocks, split in two as workers split */
        memcpy(got, init, sizeof(float) * m * n);
        sw_amx_q8_gemm_packed_emu(m, 0, blocks / 2, k, qa, sa, pw, sw, 1.0f, got, n);
        sw_amx_q8_gemm_packed_emu(m, blocks / 2, blocks, k, qa, sa, pw, sw, 1.0f, got, n);
        int same = 1;
        for (int r = 0; r < m; r++)
            for (int j = 0; j < 16 * blocks; j++)
                same &= got[r * n + j] == want[r * n + j];
        CHECK(same);
        if (!same)
            printf("emulated AMX %dx%dx%d differs at %s\n", m, n, k,
                   sw_cpu_level_name((sw_cpu_level)levels[i]));
        /* the packed product's dispatch with the tiles emulated: AMX where
         * the level allows it (v4), the vector kernels below */
        sw_amx_force(SW_AMX_EMULATED);
        memcpy(got, init, sizeof(float) * m * n);
        sw_q8_gemm_nt_packed(m, 0, n, n, k, qa, sa, pw, sw, sums, 1.0f, got, n);
        CHECK(memcmp(got, want, sizeof(float) * m * n) == 0);
        sw_amx_force(-1);
    }
    sw_cpu_level_force(-1);
    if (sw_amx_int8_path() == SW_AMX_HARDWARE) {
        memcpy(got, init, sizeof(float) * m * n);
        sw_amx_q8_gemm_packed_hw(m, 0, blocks, k, qa, sa, pw, sw, 1.0f, got, n);
        int same = 1;
        for (int r = 0; r < m; r++)
            for (int j = 0; j < 16 * blocks; j++)
                same &= got[r * n + j] == want[r * n + j];
        CHECK(same);
    }
    free(qa);
    free(qw);
    free(pw);
    free(sa);
    free(sw);
    free(init);
    free(want);
    free(got);
    free(sums);
}

/* TDPBF16PS's arithmetic for one output over kp / 32 instructions: per
 * instruction, even and odd partial sums from zero by flushed fused
 * multiply-adds over 16 pairs, then dest + (even + odd), flushed. */
static float sdm_bf16_dot(const uint16_t *a, const uint16_t *w, int k, int kp)
{
    float d = 0.0f;
    for (int s = 0; s < kp / 32; s++) {
        float even = 0.0f, odd = 0.0f;
        for (int p = 0; p < 16; p++) {
            int i = 32 * s + 2 * p;
            float a0 = i < k ? sw_bf16_to_f32(a[i]) : 0.0f,
                  w0 = i < k ? sw_bf16_to_f32(w[i]) : 0.0f;
            float a1 = i + 1 < k ? sw_bf16_to_f32(a[i + 1]) : 0.0f;
            float w1 = i + 1 < k ? sw_bf16_to_f32(w[i + 1]) : 0.0f;
            even = sw_emu_flush(fmaf(a0, w0, even));
            odd = sw_emu_flush(fmaf(a1, w1, odd));
        }
        d = sw_emu_flush(d + sw_emu_flush(even + odd));
    }
    return d;
}

static void check_bf16(int m, int n, int k)
{
    int kp = sw_bf16_padded_k(k);
    float *x = malloc(sizeof(float) * m * k), *init = malloc(sizeof(float) * m * n);
    float *want = malloc(sizeof(float) * m * n), *got = malloc(sizeof(float) * m * n);
    float *mag = malloc(sizeof(float) * m * n);
    double *exact = malloc(sizeof(double) * m * n);
    uint16_t *a = calloc((size_t)m * kp, 2), *w = malloc((size_t)n * k * 2),
             *pack = malloc((size_t)32 * kp * 2);
    for (int i = 0; i < m * k; i++)
        x[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    for (int r = 0; r < m; r++)
        sw_bf16_round(x + (long)r * k, (size_t)k, a + (long)r * kp);
    for (int i = 0; i < n * k; i++)
        w[i] = sw_f32_to_bf16(((float)rand() / (float)RAND_MAX - 0.5f) * 0.2f);
    const float alpha = 0.75f, beta = 0.5f;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            float c0 = init[r * n + j] = (float)rand() / (float)RAND_MAX;
            float v = alpha * sdm_bf16_dot(a + (long)r * kp, w + (long)j * k, k, kp);
            want[r * n + j] = v + beta * c0;
            double e = 0.0, t = 0.0;
            for (int i = 0; i < k; i++) {
                double p = (double)sw_bf16_to_f32(a[(long)r * kp + i]) *
                           sw_bf16_to_f32(w[(long)j * k + i]);
                e += p;
                t += fabs(p);
            }
            exact[r * n + j] = alpha * e + beta * c0;
            mag[r * n + j] = (float)(alpha * t + beta * c0);
        }
    int levels[3] = {SW_CPU_BASELINE, SW_CPU_V3, SW_CPU_V4};
    for (int i = 0; i < 3 && levels[i] <= (int)sw_cpu_level_hardware(); i++) {
        sw_cpu_level_force(levels[i]);
        memcpy(got, init, sizeof(float) * m * n);
        int mid = n / 32 * 16; /* two workers' ranges, the first whole blocks */
        sw_bf16_gemm_tiles(SW_AMX_EMULATED, m, 0, mid, n, k, a, w, alpha, beta, got, n, pack);
        sw_bf16_gemm_tiles(SW_AMX_EMULATED, m, mid, n, n, k, a, w, alpha, beta, got, n, pack);
        int same = 1, close = 1;
        for (int t = 0; t < m * n; t++) {
            same &= got[t] == want[t];
            close &= fabs(got[t] - exact[t]) <= 1e-5 * mag[t];
        }
        CHECK(same);
        CHECK(close);
        if (!same)
            printf("emulated AMX-BF16 %dx%dx%d differs at %s\n", m, n, k,
                   sw_cpu_level_name((sw_cpu_level)levels[i]));
    }
    sw_cpu_level_force(-1);
    if (sw_amx_bf16_path() == SW_AMX_HARDWARE) {
        memcpy(got, init, sizeof(float) * m * n);
        sw_bf16_gemm_tiles(SW_AMX_HARDWARE, m, 0, n, n, k, a, w, alpha, beta, got, n, pack);
        int close = 1;
        for (int t = 0; t < m * n; t++)
            close &= fabs(got[t] - exact[t]) <= 1e-5 * mag[t];
        CHECK(close);
    }

    /* the backend's product on bfloat16 weights: the tiles (emulated) and the
     * float32 path (rounded operands through OpenBLAS), both near the exact */
    sw_backend *be = NULL;
    sw_error err = {SW_OK, ""};
    CHECK(sw_cpu_backend_open(2, &be, &err) == SW_OK);
    int64_t xs[2] = {m, k}, ws[2] = {n, k}, cs[2] = {m, n};
    sw_tensor tx, tw, tc;
    CHECK(sw_tensor_new(be, SW_F32, 2, xs, &tx, &err) == SW_OK);
    CHECK(sw_tensor_new(be, SW_BF16, 2, ws, &tw, &err) == SW_OK);
    CHECK(sw_tensor_new(be, SW_F32, 2, cs, &tc, &err) == SW_OK);
    memcpy(tx.data, x, sizeof(float) * m * k);
    memcpy(tw.data, w, (size_t)n * k * 2);
    for (int path = 0; path < 2; path++) {
        sw_amx_force(path ? SW_AMX_EMULATED : SW_AMX_NONE);
        memcpy(tc.data, init, sizeof(float) * m * n);
        CHECK(sw_matmul(&tx, &tw, &tc, 1, alpha, beta, &err) == SW_OK);
        const float *out = tc.data;
        int close = 1, tiled = 1;
        for (int t = 0; t < m * n; t++) {
            close &= fabs(out[t] - exact[t]) <= 1e-5 * mag[t];
            tiled &= out[t] == want[t];
        }
        CHECK(close);
        if (path == 1 && m >= SW_AMX_MIN_ROWS)
            CHECK(tiled); /* the tiles' bits: they ran */
    }
    sw_amx_force(-1);
    sw_tensor_free(&tx);
    sw_tensor_free(&tw);
    sw_tensor_free(&tc);
    be->destroy(be);
    free(x);
    free(init);
    free(want);
    free(got);
    free(mag);
    free(exact);
    free(a);
    free(w);
    free(pack);
}

int main(void)
{
    srand(30);
    check_byte_products();
    check_load_store();
    check_bf16_rules();
    check_faults();
    /* m: one row half, two, past 32 (a second row group) and a remainder;
     * n: an odd block count and a row-major tail; k: whole tiles, a tail of
     * 4 to 60 bytes, and less than one tile */
    int shapes[][3] = {{8, 48, 64},   {16, 32, 384}, {21, 87, 136},  {32, 64, 1536},
                       {37, 112, 68}, {5, 16, 40},   {70, 160, 452}, {1, 16, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_q8(shapes[i][0], shapes[i][1], shapes[i][2]);
    /* bf16: one block, odd blocks and a column tail, k padded from 8 to 31
     * values, two row groups */
    int bf_shapes[][3] = {{8, 16, 32}, {21, 87, 100}, {40, 64, 384}, {3, 48, 64}, {33, 40, 1}};
    for (size_t i = 0; i < sizeof bf_shapes / sizeof bf_shapes[0]; i++)
        check_bf16(bf_shapes[i][0], bf_shapes[i][1], bf_shapes[i][2]);
    printf("AMX here: %s\n", sw_amx_describe());
    return sw_check_summary("test_amx");
}
