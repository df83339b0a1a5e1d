/* The few-rows kernel against a double-precision loop, over the shapes the
 * decoder uses, and its sum order independent of where the rows start; its
 * float16-weight form bit for bit the float32 one on the widened weight. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu_dispatch.h"
#include "elementwise_math.h"
#include "small_gemm.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static void check_shape(int m, int n, int k)
{
    float *a = malloc(sizeof *a * (size_t)(m * k)), *w = malloc(sizeof *w * (size_t)(n * k));
    float *c = malloc(sizeof *c * (size_t)(m * n));
    for (int i = 0; i < m * k; i++)
        a[i] = frand();
    for (int i = 0; i < n * k; i++)
        w[i] = frand();
    for (int i = 0; i < m * n; i++)
        c[i] = 1.0f;
    /* two column ranges, as the worker pool splits them */
    sw_small_gemm_nt(m, 0, n / 2, k, 0.5f, a, k, w, k, 1.0f, c, n);
    sw_small_gemm_nt(m, n / 2, n, k, 0.5f, a, k, w, k, 1.0f, c, n);
    double worst = 0.0;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int i = 0; i < k; i++)
                s += (double)a[r * k + i] * w[j * k + i];
            worst = fmax(worst, fabs(0.5 * s + 1.0 - c[r * n + j]));
        }
    CHECK_NEAR(worst, 0.0, 1e-4 * sqrt((double)k));
    /* every row's result is bit for bit its dot product alone, whatever m:
     * batched decoding relies on it */
    float *c1 = malloc(sizeof *c1 * (size_t)(m * n));
    sw_small_gemm_nt(m, 0, n, k, 1.0f, a, k, w, k, 0.0f, c1, n);
    int same = 1;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++)
            same &= c1[r * n + j] == sw_dot(a + r * k, w + j * k, k);
    CHECK(same);
    free(c1);
    free(a);
    free(w);
    free(c);
}

/* Halves in rows of ldw (a view of a wider matrix), in blocks of `rows`
 * weight rows and in two column ranges: every output equals the float32
 * kernel's on the widened weight. alpha 1 with beta 0 or 1 (the decoder's
 * calls) takes f16_rows_grouped.c's path for whole groups of eight columns
 * and the tile path for the rest. */
static void check_halves_ab(int m, int n, int k, int ldw, int rows, float alpha, float beta)
{
    float *a = malloc(sizeof(float) * (size_t)(m * k)),
          *w = malloc(sizeof(float) * (size_t)(n * k));
    uint16_t *h = malloc(sizeof *h * (size_t)(n * ldw));
    float *c = malloc(sizeof(float) * (size_t)(m * n)),
          *c16 = malloc(sizeof(float) * (size_t)(m * n));
    float *scratch = malloc(sizeof(float) * (size_t)(rows * k));
    for (int i = 0; i < m * k; i++)
        a[i] = frand();
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ldw; i++) {
            h[j * ldw + i] = sw_f32_to_f16(frand());
            if (i < k)
                w[j * k + i] = sw_f16_to_f32(h[j * ldw + i]);
        }
    for (int i = 0; i < m * n; i++)
        c[i] = c16[i] = frand();
    sw_small_gemm_nt(m, 0, n, k, alpha, a, k, w, k, beta, c, n);
    sw_small_gemm_nt_f16(m, 0, n / 3, k, alpha, a, k, h, ldw, beta, c16, n, scratch, rows);
    sw_small_gemm_nt_f16(m, n / 3, n, k, alpha, a, k, h, ldw, beta, c16, n, scratch, rows);
    CHECK(memcmp(c, c16, sizeof(float) * (size_t)(m * n)) == 0);
    free(a);
    free(w);
    free(h);
    free(c);
    free(c16);
    free(scratch);
}

static void check_halves(int m, int n, int k, int ldw, int rows)
{
    check_halves_ab(m, n, k, ldw, rows, 0.5f, 0.25f);
    check_halves_ab(m, n, k, ldw, rows, 1.0f, 0.0f);
    check_halves_ab(m, n, k, ldw, rows, 1.0f, 1.0f);
}

int main(void)
{
    srand(3);
    int shapes[][3] = {{1, 51864, 384}, {5, 1000, 384}, {3, 77, 17},   {15, 64, 1},
                       {2, 33, 100},    {40, 300, 384}, {63, 20, 1536}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        check_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
    /* at every level the CPU has: v4 and v3 widen in registers for up to
     * eight rows when k is a multiple of 16, else through scratch */
    int levels[3] = {SW_CPU_BASELINE, SW_CPU_V3, SW_CPU_V4};
    for (int i = 0; i < 3 && levels[i] <= (int)sw_cpu_level_hardware(); i++) {
        sw_cpu_level_force(levels[i]);
        check_halves(5, 1000, 384, 384, sw_small_gemm_f16_rows(384));
        check_halves(1, 517, 83, 83, sw_small_gemm_f16_rows(83));
        check_halves(7, 100, 64, 80, 12); /* rows of a wider matrix */
        check_halves(8, 50, 32, 32, 12);
        check_halves(9, 50, 32, 32, 12);
        check_halves(40, 90, 1536, 1536, 1);
        for (int m = 1; m <= 8; m++) /* every tile of the grouped path, odd column ranges */
            check_halves(m, 203, 384, 400, 12);
    }
    sw_cpu_level_force(-1);
    return sw_check_summary("test_small_gemm");
}
