/* int8 products: quantization within half a step of the float, the vector
 * kernel bit-identical to the portable loop (the int32 sums are exact), and
 * the product close to float32's, over the decoder's and encoder's shapes and
 * lengths that are not multiples of 64. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_dispatch.h"
#include "q8_gemm.h"
#include "q8_packed.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static void check_quantize(void)
{
    float x[2][5] = {{0.5f, -1.0f, 0.25f, 0.0f, 1.0f}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    int8_t q[10];
    float s[2];
    sw_q8_quantize_rows(&x[0][0], 2, 5, 5, q, s);
    CHECK_NEAR(s[0], 127.0f, 0.0);
    CHECK(q[1] == -127 && q[4] == 127 && q[3] == 0);
    CHECK(q[0] == 64); /* 63.5 rounds half to even */
    CHECK(s[1] == 1.0f);
    for (int i = 5; i < 10; i++)
        CHECK(q[i] == 0);
}

static void check_shape(int m, int n, int k)
{
    float *a = malloc(sizeof *a * (size_t)(m * k)), *w = malloc(sizeof *w * (size_t)(n * k));
    float *c = malloc(sizeof *c * (size_t)(m * n)), *c_ref = malloc(sizeof *c * (size_t)(m * n));
    int8_t *qa = malloc((size_t)(m * k)), *qw = malloc((size_t)(n * k));
    float *sa = malloc(sizeof *sa * (size_t)m), *sw = malloc(sizeof *sw * (size_t)n);
    int32_t *sums = malloc(sizeof *sums * (size_t)n);
    for (int i = 0; i < m * k; i++)
        a[i] = frand();
    for (int i = 0; i < n * k; i++)
        w[i] = frand() * 0.1f;
    sw_q8_quantize_rows(a, m, k, k, qa, sa);
    sw_q8_quantize_rows(w, n, k, k, qw, sw);
    sw_q8_row_sums(qw, n, k, sums);
    for (int i = 0; i < m * n; i++)
        c[i] = c_ref[i] = 1.0f;
    /* two column ranges, as the worker pool splits them; beta 1 accumulates */
    sw_q8_gemm_nt(m, 0, n / 2, k, qa, sa, qw, sw, sums, 1.0f, c, n);
    sw_q8_gemm_nt(m, n / 2, n, k, qa, sa, qw, sw, sums, 1.0f, c, n);
    sw_q8_gemm_nt_scalar(m, 0, n, k, qa, sa, qw, sw, 1.0f, c_ref, n);
    int same = 1;
    double worst = 0.0, scale = 0.0;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            same &= c[r * n + j] == c_ref[r * n + j];
            double s = 0.0;
            for (int i = 0; i < k; i++)
                s += (double)a[r * k + i] * w[j * k + i];
            worst = fmax(worst, fabs(s + 1.0 - c[r * n + j]));
            scale = fmax(scale, fabs(s));
        }
    CHECK(same);
    /* two roundings of at most half a step each, over k terms */
    CHECK(worst < 0.02 * scale + 1e-6);
    free(a);
    free(w);
    free(c);
    free(c_ref);
    free(qa);
    free(qw);
    free(sa);
    free(sw);
    free(sums);
}

/* The packed layout at every CPU level this machine has (VNNI, AVX2, the
 * portable loop): the bits of the row-major scalar path, with columns split
 * at multiples of 16 as the backend splits them, tiles of every row count
 * and the row-major tail past the last whole block. */
static void check_packed(int m, int n, int k)
{
    int8_t *qa = malloc((size_t)(m * k)), *qw = malloc((size_t)(n * k)),
           *pw = malloc((size_t)(n * k));
    float *sa = malloc(sizeof *sa * (size_t)m), *sw = malloc(sizeof *sw * (size_t)n);
    float *c = malloc(sizeof *c * (size_t)(m * n)), *c_ref = malloc(sizeof *c * (size_t)(m * n));
    int32_t *sums = malloc(sizeof *sums * (size_t)n);
    for (int i = 0; i < m * k; i++)
        qa[i] = (int8_t)(rand() % 255 - 127);
    for (int i = 0; i < n * k; i++)
        qw[i] = (int8_t)(rand() % 255 - 127);
    for (int r = 0; r < m; r++)
        sa[r] = 0.5f + frand() * 0.25f;
    for (int j = 0; j < n; j++)
        sw[j] = 2.0f + frand();
    sw_q8_row_sums(qw, n, k, sums);
    CHECK(sw_q8_packable(n, k));
    /* in two halves, as workers pack, from the block boundary */
    int blocks = (n + 15) / 16;
    sw_q8_pack_blocks(qw, n, k, 0, blocks / 2, pw);
    sw_q8_pack_blocks(qw, n, k, blocks / 2, blocks, pw);
    float *c_init = malloc(sizeof *c * (size_t)(m * n)); /* beta 1 adds to what is there */
    for (int i = 0; i < m * n; i++)
        c_init[i] = c_ref[i] = frand();
    sw_q8_gemm_nt_scalar(m, 0, n, k, qa, sa, qw, sw, 1.0f, c_ref, n);
    int levels[3] = {SW_CPU_BASELINE, SW_CPU_V3, SW_CPU_V4};
    for (int i = 0; i < 3 && levels[i] <= (int)sw_cpu_level_hardware(); i++) {
        sw_cpu_level_force(levels[i]);
        memcpy(c, c_init, sizeof *c * (size_t)(m * n));
        int mid = n / 2 & ~15;
        sw_q8_gemm_nt_packed(m, 0, mid, n, k, qa, sa, pw, sw, sums, 1.0f, c, n);
        sw_q8_gemm_nt_packed(m, mid, n, n, k, qa, sa, pw, sw, sums, 1.0f, c, n);
        int same = 1;
        for (int x = 0; x < m * n; x++)
            same &= c[x] == c_ref[x];
        CHECK(same);
        if (!same)
            printf("packed %dx%dx%d differs at %s\n", m, n, k,
                   sw_cpu_level_name((sw_cpu_level)levels[i]));
    }
    sw_cpu_level_force(-1);
    free(qa);
    free(qw);
    free(pw);
    free(sa);
    free(sw);
    free(c);
    free(c_ref);
    free(c_init);
    free(sums);
}

int main(void)
{
    srand(5);
    check_quantize();
    int shapes[][3] = {{1, 2000, 384},  {5, 1000, 384}, {3, 77, 17}, {9, 64, 1},
                       {33, 130, 1536}, {4, 5, 100},    {40, 48, 64}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
    int packed[][3] = {{1, 2000, 384},  {5, 1000, 384}, {8, 48, 64}, {9, 77, 20},
                       {33, 130, 1536}, {4, 5, 100},    {17, 16, 4}, {12, 200, 388}};
    for (size_t i = 0; i < sizeof packed / sizeof packed[0]; i++) {
        srand(13 + (unsigned)i);
        check_packed(packed[i][0], packed[i][1], packed[i][2]);
    }
    CHECK(!sw_q8_packable(8, 17) && !sw_q8_packable(0, 64));
    return sw_check_summary("test_q8_gemm");
}
