/* The CPU backend's ops against naive loops, the shared half/bfloat16
 * arithmetic bit for bit, and the shape checks of ops.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "check.h"
#include "elementwise_math.h"
#include "ops.h"
#include "q8_gemm.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static sw_tensor make(sw_backend *b, int rows, int cols, int fill)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t;
    int64_t shape[2] = {rows, cols};
    sw_tensor_new(b, SW_F32, 2, shape, &t, &err);
    float *d = t.data;
    for (int i = 0; i < rows * cols; i++)
        d[i] = fill ? frand() : 0.0f;
    return t;
}

static void test_matmul(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int m = 37, k = 129, n = 65;
    sw_tensor a = make(b, m, k, 1), bm = make(b, k, n, 1), bt = make(b, n, k, 1);
    sw_tensor c = make(b, m, n, 0), c2 = make(b, m, n, 0);
    CHECK(sw_matmul(&a, &bm, &c, 0, 1.0f, 0.0f, &err) == SW_OK);
    CHECK(sw_matmul(&a, &bt, &c2, 1, 2.0f, 0.0f, &err) == SW_OK);
    const float *A = a.data, *B = bm.data, *BT = bt.data, *C = c.data, *C2 = c2.data;
    double worst = 0.0, worst_t = 0.0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0, st = 0.0;
            for (int p = 0; p < k; p++) {
                s += (double)A[i * k + p] * B[p * n + j];
                st += (double)A[i * k + p] * BT[j * k + p];
            }
            worst = fmax(worst, fabs(s - C[i * n + j]));
            worst_t = fmax(worst_t, fabs(2.0 * st - C2[i * n + j]));
        }
    CHECK_NEAR(worst, 0.0, 1e-4);
    CHECK_NEAR(worst_t, 0.0, 2e-4);
    /* mismatched inner dimensions are an argument error, not a crash */
    CHECK(sw_matmul(&a, &bt, &c, 0, 1.0f, 0.0f, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "do not fit") != NULL);
    sw_tensor_free(&a);
    sw_tensor_free(&bm);
    sw_tensor_free(&bt);
    sw_tensor_free(&c);
    sw_tensor_free(&c2);
}

/* GELU has its own erf (elementwise_math.h): across -12 .. 12, both of its
 * ranges and the clamp, against erf in double; NaN stays NaN. */
static void check_gelu_sweep(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    enum { N = 1 << 18 };
    int64_t shape[1] = {N};
    sw_tensor x, out;
    CHECK(sw_tensor_new(b, SW_F32, 1, shape, &x, &err) == SW_OK);
    CHECK(sw_tensor_new(b, SW_F32, 1, shape, &out, &err) == SW_OK);
    float *X = x.data;
    for (int i = 0; i < N; i++)
        X[i] = -12.0f + 24.0f * (float)i / (float)(N - 1);
    X[7] = NAN;
    CHECK(sw_gelu(&x, &out, &err) == SW_OK);
    const float *O = out.data;
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        if (i == 7)
            continue;
        double v = X[i], exact = 0.5 * v * erfc(-v / sqrt(2.0));
        worst = fmax(worst, fabs(exact - O[i]) / fmax(1.0, fabs(exact)));
    }
    CHECK_NEAR(worst, 0.0, 3e-7); /* 2.5 units in the last place of 1.0f */
    CHECK(isnan(O[7]));
    sw_tensor_free(&x);
    sw_tensor_free(&out);
}

static void test_elementwise(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int rows = 300, cols = 257; /* above the parallel chunk size */
    sw_tensor x = make(b, rows, cols, 1), y = make(b, rows, cols, 1), row = make(b, 1, cols, 1);
    sw_tensor out = make(b, rows, cols, 0), g = make(b, 1, cols, 1), be = make(b, 1, cols, 1);
    const float *X = x.data, *Y = y.data, *R = row.data, *O = out.data;
    const float *G = g.data, *BE = be.data;
    double worst;

    CHECK(sw_add(&x, &y, &out, &err) == SW_OK);
    worst = 0;
    for (int i = 0; i < rows * cols; i++)
        worst = fmax(worst, fabs((double)(X[i] + Y[i]) - O[i]));
    CHECK_NEAR(worst, 0.0, 0.0);

    CHECK(sw_mul(&x, &row, &out, &err) == SW_OK);
    worst = 0;
    for (int i = 0; i < rows * cols; i++)
        worst = fmax(worst, fabs((double)(X[i] * R[i % cols]) - O[i]));
    CHECK_NEAR(worst, 0.0, 0.0);

    CHECK(sw_scale(&x, 0.5f, &out, &err) == SW_OK);
    CHECK(O[17] == X[17] * 0.5f);

    CHECK(sw_gelu(&x, &out, &err) == SW_OK);
    worst = 0;
    for (int i = 0; i < rows * cols; i++) {
        double v = X[i];
        worst = fmax(worst, fabs(0.5 * v * (1.0 + erf(v / sqrt(2.0))) - O[i]));
    }
    CHECK_NEAR(worst, 0.0, 1e-6);
    check_gelu_sweep(b);

    CHECK(sw_softmax(&x, &out, &err) == SW_OK);
    worst = 0;
    for (int r = 0; r < rows; r++) {
        double mx = -1e30, sum = 0;
        for (int i = 0; i < cols; i++)
            mx = fmax(mx, X[r * cols + i]);
        for (int i = 0; i < cols; i++)
            sum += exp(X[r * cols + i] - mx);
        for (int i = 0; i < cols; i++)
            worst = fmax(worst, fabs(exp(X[r * cols + i] - mx) / sum - O[r * cols + i]));
    }
    CHECK_NEAR(worst, 0.0, 1e-6);

    CHECK(sw_layernorm(&x, &g, &be, 1e-5f, &out, &err) == SW_OK);
    worst = 0;
    for (int r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int i = 0; i < cols; i++)
            mean += X[r * cols + i];
        mean /= cols;
        for (int i = 0; i < cols; i++)
            var += (X[r * cols + i] - mean) * (X[r * cols + i] - mean);
        var /= cols;
        for (int i = 0; i < cols; i++) {
            double want = (X[r * cols + i] - mean) / sqrt(var + 1e-5) * G[i] + BE[i];
            worst = fmax(worst, fabs(want - O[r * cols + i]));
        }
    }
    CHECK_NEAR(worst, 0.0, 1e-5);

    /* a second operand that is neither full nor one row is refused */
    sw_tensor bad = make(b, 2, cols, 1);
    CHECK(sw_add(&x, &bad, &out, &err) == SW_ERR_ARG);
    sw_tensor_free(&bad);

    sw_tensor_free(&x);
    sw_tensor_free(&y);
    sw_tensor_free(&row);
    sw_tensor_free(&out);
    sw_tensor_free(&g);
    sw_tensor_free(&be);
}

static void test_half_conversions(void)
{
    /* every finite half survives half -> float -> half exactly */
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint32_t exp = (h >> 10) & 0x1f;
        if (exp == 31 && (h & 0x3ff))
            continue; /* NaN payloads may change; NaN stays NaN (below) */
        if (sw_f32_to_f16(sw_f16_to_f32((uint16_t)h)) != h)
            mismatches++;
    }
    CHECK(mismatches == 0);
    CHECK(isnan(sw_f16_to_f32(sw_f32_to_f16(NAN))));
    CHECK(sw_f16_to_f32(sw_f32_to_f16(1e6f)) == INFINITY);
    CHECK(sw_f16_to_f32(sw_f32_to_f16(65504.0f)) == 65504.0f);
    /* ties round to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 */
    CHECK(sw_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);
    CHECK(sw_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);
    /* the smallest subnormal, and half of it rounding to zero (even) */
    CHECK(sw_f32_to_f16(0x1p-24f) == 0x0001);
    CHECK(sw_f32_to_f16(0x1p-25f) == 0x0000);
    CHECK(sw_f32_to_f16(0x1.8p-24f) == 0x0002);
    /* nearest rounding error stays within half an ulp over a range */
    double worst = 0;
    for (int i = 0; i < 100000; i++) {
        float v = frand() * 1000.0f;
        float r = sw_f16_to_f32(sw_f32_to_f16(v));
        worst = fmax(worst, fabs((double)v - r) / fmax(fabs(v), 6.1e-5));
    }
    CHECK(worst <= 0x1p-11 + 1e-12);
    /* bfloat16: round to nearest even, NaN kept */
    CHECK(sw_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(sw_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
    CHECK(sw_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
    CHECK(isnan(sw_bf16_to_f32(sw_f32_to_bf16(NAN))));
}

static void test_convert(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    sw_tensor x = make(b, 10, 100, 1), h, back = make(b, 10, 100, 0);
    CHECK(sw_tensor_new(b, SW_F16, 2, x.shape, &h, &err) == SW_OK);
    CHECK(sw_convert(&x, &h, &err) == SW_OK);
    CHECK(sw_convert(&h, &back, &err) == SW_OK);
    const float *X = x.data, *B = back.data;
    double worst = 0;
    for (int i = 0; i < 1000; i++)
        worst = fmax(worst, fabs((double)X[i] - B[i]));
    CHECK(worst <= 0x1p-11);
    sw_tensor_free(&h);
    sw_tensor_free(&x);
    sw_tensor_free(&back);
}

/* An empty inner dimension is an empty sum: c = beta * c on every backend
 * (cuBLAS itself refuses k == 0, so the CUDA backend must not ask it). */
static void test_matmul_empty_inner(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t sa[2] = {3, 0}, sb[2] = {0, 4};
    sw_tensor a, bm, c = make(b, 3, 4, 1);
    CHECK(sw_tensor_new(b, SW_F32, 2, sa, &a, &err) == SW_OK);
    CHECK(sw_tensor_new(b, SW_F32, 2, sb, &bm, &err) == SW_OK);
    float before[12];
    memcpy(before, c.data, sizeof before);
    CHECK(sw_matmul(&a, &bm, &c, 0, 1.0f, 0.5f, &err) == SW_OK);
    int bad = 0;
    for (int i = 0; i < 12; i++)
        bad += ((float *)c.data)[i] != 0.5f * before[i];
    CHECK(bad == 0);
    CHECK(sw_matmul(&a, &bm, &c, 0, 1.0f, 0.0f, &err) == SW_OK);
    for (int i = 0; i < 12; i++)
        bad += ((float *)c.data)[i] != 0.0f;
    CHECK(bad == 0);
    sw_tensor_free(&a);
    sw_tensor_free(&bm);
    sw_tensor_free(&c);
}

/* More rows than a CUDA grid's y dimension holds (65535): the int8 encoder
 * has batch x 1500 rows. Every row must equal the CPU's int8 arithmetic. */
static void test_matmul_q8_many_rows(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    const int m = 65536 + 37, k = 6, n = 3;
    sw_tensor a = make(b, m, k, 1), c = make(b, m, n, 1);
    int64_t sw_shape[2] = {n, k}, s_shape[1] = {n};
    sw_tensor w, ws, wsum;
    CHECK(sw_tensor_new(b, SW_I8, 2, sw_shape, &w, &err) == SW_OK);
    CHECK(sw_tensor_new(b, SW_F32, 1, s_shape, &ws, &err) == SW_OK);
    CHECK(sw_tensor_new(b, SW_I32, 1, s_shape, &wsum, &err) == SW_OK);
    float wf[3 * 6];
    for (int i = 0; i < n * k; i++)
        wf[i] = frand();
    sw_q8_quantize_rows(wf, n, k, k, w.data, ws.data);
    sw_q8_row_sums(w.data, n, k, wsum.data);
    float *want = malloc(sizeof(float) * (size_t)m * n);
    int8_t *qa = malloc((size_t)m * k);
    float *sa = malloc(sizeof(float) * (size_t)m);
    CHECK(want && qa && sa);
    if (want && qa && sa) {
        memcpy(want, c.data, sizeof(float) * (size_t)m * n);
        sw_q8_quantize_rows(a.data, m, k, k, qa, sa);
        sw_q8_gemm_nt_scalar(m, 0, n, k, qa, sa, w.data, ws.data, 1.0f, want, n);
        CHECK(sw_matmul_q8(&a, &w, &ws, &wsum, &c, 1.0f, &err) == SW_OK);
        long bad = 0;
        for (long i = 0; i < (long)m * n; i++)
            bad += ((float *)c.data)[i] != want[i];
        CHECK(bad == 0);
    }
    free(want);
    free(qa);
    free(sa);
    sw_tensor *all[] = {&a, &c, &w, &ws, &wsum};
    for (int i = 0; i < 5; i++)
        sw_tensor_free(all[i]);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(0, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_ops");
    srand(1);
    test_matmul(b);
    test_matmul_empty_inner(b);
    test_matmul_q8_many_rows(b);
    test_elementwise(b);
    test_convert(b);
    test_half_conversions();
    sw_pool_stats s = b->memory(b);
    CHECK(s.allocated == 0);
    CHECK(s.live_blocks == 0);
    CHECK(s.peak_allocated > 0);
    b->destroy(b);
    CHECK(sw_cpu_backend_open(5000, &b, &err) == SW_ERR_ARG);
    return sw_check_summary("test_ops");
}
