/* The backend table's ABI 6 entries (backend.h, fused_ops.h), on the CPU
 * and (test_fused_ops_emulated) on the CUDA backend's kernels: a backend
 * provides an entry exactly where `supports` says so, a declined entry
 * called anyway fails with SW_ERR_ARG, and what a backend provides gives
 * what the table's plain ops give: a prepared linear layer's fused product
 * the product, bias and ReLU; a prepared 3x3 convolution the direct sum;
 * int8 weights from prepare_q8 the host's quantization and its products.
 * On a device backend every fused entry also gives the CPU backend's answer
 * on the same inputs (odd sizes, several images, both strides), the
 * element-wise ones to the bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device_tensors.h"
#include "fused_ops.h"
#include "ops.h"
#include "q8_gemm.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

/* A float32 tensor on b from host values (NULL: zeros). */
static sw_tensor make(sw_backend *b, int ndim, const int64_t *shape, const float *host)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t = {0};
    CHECK(sw_tensor_new(b, SW_F32, ndim, shape, &t, &err) == SW_OK);
    size_t bytes = sw_tensor_nbytes(&t);
    float *zeros = host ? NULL : calloc(1, bytes ? bytes : 1);
    CHECK(b->upload(b, t.data, host ? host : zeros, bytes, &err) == SW_OK);
    free(zeros);
    return t;
}

static float *random_floats(size_t n)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = frand();
    return v;
}

/* Every fused entry is there exactly where `supports` admits its shapes. */
static void test_entries_match_answers(sw_backend *b)
{
    CHECK(b->supports != NULL);
    CHECK(sw_supports(b, SW_CAP_GATHER_LINEAR, 0, 32) ==
          (b->gather_linear != NULL && b->prepare_linear != NULL));
    CHECK(sw_supports(b, SW_CAP_CONV3X3, 32, 32) ==
          (b->conv3x3 != NULL && b->prepare_conv3x3 != NULL));
    CHECK(sw_supports(b, SW_CAP_CONV3X3_SINGLE, 1, 32) == (b->conv3x3_single != NULL));
    CHECK(sw_supports(b, SW_CAP_AFFINE_RELU_ROWS, 0, 0) == (b->affine_relu_rows != NULL));
    CHECK(sw_supports(b, SW_CAP_SPAN_ABS_POOL, 0, 0) == (b->span_abs_pool != NULL));
    /* the CPU's Winograd takes channels in multiples of 8; the GPU's im2col any */
    CHECK(sw_supports(b, SW_CAP_CONV3X3, 3, 5) == (b->kind != SW_DEVICE_CPU));
    /* every backend has every entry CAM++ and segmentation call (one path) */
    CHECK(sw_supports(b, SW_CAP_GATHER_LINEAR, 0, 32) && sw_supports(b, SW_CAP_CONV3X3, 32, 32) &&
          sw_supports(b, SW_CAP_CONV3X3_SINGLE, 1, 32) &&
          sw_supports(b, SW_CAP_AFFINE_RELU_ROWS, 0, 0) &&
          sw_supports(b, SW_CAP_SPAN_ABS_POOL, 0, 0));
    /* a backend's memory is the host's, or its weights may be halves: a GPU is
     * the second, the CPU the first, none both */
    CHECK(sw_supports(b, SW_CAP_HOST_MEMORY, 0, 0) != sw_supports(b, SW_CAP_HALF_WEIGHTS, 0, 0));
}

/* y = relu(x w^T + bias) through prepare_linear and gather_linear (taps 1),
 * against matmul, add and leaky_relu(0) on the same backend. */
static void test_gather_linear(sw_backend *b, int64_t n, int64_t c_in, int64_t c_out)
{
    sw_error err = {SW_OK, ""};
    int64_t sx[2] = {n, c_in}, sw[2] = {c_out, c_in}, sb[1] = {c_out}, sy[2] = {n, c_out};
    float *hx = random_floats((size_t)(n * c_in)), *hw = random_floats((size_t)(c_out * c_in));
    float *hb = random_floats((size_t)c_out);
    sw_tensor x = make(b, 2, sx, hx), w = make(b, 2, sw, hw), bias = make(b, 1, sb, hb);
    sw_tensor want = make(b, 2, sy, NULL), got = make(b, 2, sy, NULL);
    CHECK(sw_matmul(&x, &w, &want, 1, 1.0f, 0.0f, &err) == SW_OK &&
          sw_add(&want, &bias, &want, &err) == SW_OK &&
          sw_leaky_relu(&want, 0.0f, &want, &err) == SW_OK);
    if (!sw_supports(b, SW_CAP_GATHER_LINEAR, 0, c_out)) {
        sw_error declined = {SW_OK, ""};
        CHECK(sw_gather_linear(&x, NULL, 1, &w, SW_LAYOUT_OUT_IN, &bias, 1, n, &got, &declined) ==
              SW_ERR_ARG);
        CHECK(strstr(declined.msg, b->name) != NULL);
    } else {
        sw_weight_layout layout = SW_LAYOUT_IN_OUT;
        CHECK(sw_prepare_linear(b, &w, &layout, &err) == SW_OK);
        int64_t out = layout == SW_LAYOUT_IN_OUT ? w.shape[1] : w.shape[0];
        CHECK(out == c_out);
        CHECK(sw_gather_linear(&x, NULL, 1, &w, layout, &bias, 1, 16, &got, &err) == SW_OK);
        float *a = download(b, &want), *g = download(b, &got);
        double worst = 0.0;
        for (int64_t i = 0; i < n * c_out; i++) {
            double d = fabs((double)a[i] - (double)g[i]);
            worst = d > worst || d != d ? d : worst;
        }
        if (worst >= 1e-4)
            fprintf(stderr, "gather_linear c_out=%lld: max diff %g\n", (long long)c_out, worst);
        CHECK(worst < 1e-4);
        free(a);
        free(g);
    }
    sw_tensor *all[] = {&x, &w, &bias, &want, &got};
    for (int i = 0; i < 5; i++)
        sw_tensor_free(all[i]);
    free(hx);
    free(hw);
    free(hb);
}

/* A 3x3 convolution (padding 1, stride along the rows) of one image, h x
 * wd, through prepare_conv3x3 and conv3x3 from the loaded layout [C_out,
 * 9 * C_in] (tap-major rows), against the direct sum in double. */
static void test_conv3x3(sw_backend *b, int stride, int64_t ci, int64_t co)
{
    const int64_t h = 6, wd = 7, ho = (h - 1) / stride + 1;
    sw_error err = {SW_OK, ""};
    int64_t sx[2] = {h * wd, ci}, sw[2] = {co, 9 * ci}, sy[2] = {ho * wd, co}, off[2] = {0, wd};
    float *hx = random_floats((size_t)(h * wd * ci)), *hw = random_floats((size_t)(co * 9 * ci));
    sw_tensor x = make(b, 2, sx, hx), w = make(b, 2, sw, hw), y = make(b, 2, sy, NULL), u = {0};
    if (!sw_supports(b, SW_CAP_CONV3X3, ci, co)) {
        sw_error declined = {SW_OK, ""};
        CHECK(sw_conv3x3(&x, h, 1, off, &w, stride, NULL, NULL, 0, &y, &declined) == SW_ERR_ARG);
    } else {
        CHECK(sw_prepare_conv3x3(b, &w, SW_LAYOUT_OUT_IN, stride, &u, &err) == SW_OK);
        CHECK(sw_conv3x3(&x, h, 1, off, &u, stride, NULL, NULL, 0, &y, &err) == SW_OK);
        float *got = download(b, &y);
        double worst = 0.0;
        for (int64_t r = 0; r < ho; r++)
            for (int64_t t = 0; t < wd; t++)
                for (int64_t o = 0; o < co; o++) {
                    double sum = 0.0;
                    for (int dr = 0; dr < 3; dr++)
                        for (int dt = 0; dt < 3; dt++) {
                            int64_t rr = r * stride + dr - 1, tt = t + dt - 1;
                            if (rr < 0 || rr >= h || tt < 0 || tt >= wd)
                                continue;
                            for (int64_t c = 0; c < ci; c++)
                                sum += (double)hx[(rr * wd + tt) * ci + c] *
                                       hw[(o * 9 + dr * 3 + dt) * ci + c];
                        }
                    double d = fabs(sum - got[(r * wd + t) * co + o]);
                    worst = d > worst || d != d ? d : worst;
                }
        if (worst >= 1e-4)
            fprintf(stderr, "conv3x3 stride %d, %lld -> %lld: max diff %g\n", stride, (long long)ci,
                    (long long)co, worst);
        CHECK(worst < 1e-4);
        free(got);
    }
    sw_tensor *all[] = {&x, &w, &y, &u};
    for (int i = 0; i < 4; i++)
        sw_tensor_free(all[i]);
    free(hx);
    free(hw);
}

/* ---- a device backend's fused entries against the CPU backend's ---- */

static sw_tensor make_ids(sw_backend *b, const int32_t *host, int64_t n)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t = {0};
    CHECK(sw_tensor_new(b, SW_I32, 1, &n, &t, &err) == SW_OK);
    CHECK(b->upload(b, t.data, host, (size_t)n * sizeof *host, &err) == SW_OK);
    return t;
}

/* the largest |a - b| / (1 + |a|), NaN counting as the worst */
static double worst_diff(const float *a, const float *b, int64_t n)
{
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / (1.0 + fabs((double)a[i]));
        worst = d > worst || d != d ? d : worst;
    }
    return worst;
}

/* got[1] (the device) within tol of got[0] (the CPU), relative, else a line
 * naming `what`; both results freed. */
static void expect_near_cpu(float *got[2], int64_t n, double tol, const char *what)
{
    double worst = worst_diff(got[0], got[1], n);
    if (worst >= tol)
        fprintf(stderr, "%s: %g from the CPU\n", what, worst);
    CHECK(worst < tol);
    free(got[0]);
    free(got[1]);
}

/* y through prepare_linear and gather_linear on `dev` and on the CPU:
 * `taps` taps of ids reaching below and past x's rows (zeros), or none. */
static void gather_linear_pair(sw_backend *dev, sw_backend *cpu, int64_t n_out, int taps,
                               int64_t c_in, int64_t c_out, int with_ids, int relu)
{
    const int64_t x_rows = 41;
    int64_t rows = with_ids ? x_rows : n_out, sx[2] = {rows, c_in};
    int64_t sw[2] = {c_out, taps * c_in}, sb[1] = {c_out}, sy[2] = {n_out, c_out};
    float *hx = random_floats((size_t)(rows * c_in)), *hw = random_floats((size_t)(sw[0] * sw[1]));
    float *hb = random_floats((size_t)c_out), *got[2];
    int32_t *hid = malloc((size_t)(n_out * taps) * sizeof *hid);
    for (int64_t i = 0; hid && i < n_out * taps; i++)
        hid[i] = rand() % (x_rows + 6) - 3;
    sw_backend *bs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
        sw_error err = {SW_OK, ""};
        sw_backend *b = bs[k];
        sw_tensor x = make(b, 2, sx, hx), w = make(b, 2, sw, hw), bias = make(b, 1, sb, hb);
        sw_tensor y = make(b, 2, sy, NULL), ids = {0};
        if (with_ids)
            ids = make_ids(b, hid, n_out * taps);
        sw_weight_layout layout = SW_LAYOUT_OUT_IN;
        CHECK(sw_prepare_linear(b, &w, &layout, &err) == SW_OK);
        CHECK(sw_gather_linear(&x, with_ids ? &ids : NULL, with_ids ? taps : 1, &w, layout, &bias,
                               relu, 16, &y, &err) == SW_OK);
        got[k] = download(b, &y);
        sw_tensor *all[] = {&x, &w, &bias, &y, &ids};
        for (int i = 0; i < 5; i++)
            sw_tensor_free(all[i]);
    }
    char what[96];
    snprintf(what, sizeof what, "gather_linear %lld x %d taps x %lld -> %lld", (long long)n_out,
             taps, (long long)c_in, (long long)c_out);
    expect_near_cpu(got, n_out * c_out, 1e-5, what);
    free(hx);
    free(hw);
    free(hb);
    free(hid);
}

/* Three images of odd widths (one a single column), an odd height, bias,
 * residual and ReLU, at `stride`: conv3x3 on `dev` and on the CPU. */
static void conv3x3_pair(sw_backend *dev, sw_backend *cpu, int stride)
{
    const int64_t h = 7, ci = 8, co = 16, ho = (h - 1) / stride + 1, off[4] = {0, 5, 6, 14};
    int64_t sx[2] = {h * off[3], ci}, sw[2] = {co, 9 * ci}, sb[1] = {co}, sy[2] = {ho * off[3], co};
    float *hx = random_floats((size_t)(sx[0] * ci)), *hw = random_floats((size_t)(co * 9 * ci));
    float *hb = random_floats((size_t)co), *ha = random_floats((size_t)(sy[0] * co)), *got[2];
    sw_backend *bs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
        sw_error err = {SW_OK, ""};
        sw_backend *b = bs[k];
        sw_tensor x = make(b, 2, sx, hx), w = make(b, 2, sw, hw), bias = make(b, 1, sb, hb);
        sw_tensor add = make(b, 2, sy, ha), y = make(b, 2, sy, NULL), u = {0};
        CHECK(sw_prepare_conv3x3(b, &w, SW_LAYOUT_OUT_IN, stride, &u, &err) == SW_OK);
        CHECK(sw_conv3x3(&x, h, 3, off, &u, stride, &bias, &add, 1, &y, &err) == SW_OK);
        got[k] = download(b, &y);
        /* columns that do not add up to x's rows: refused, nothing written */
        sw_error bad = {SW_OK, ""};
        int64_t short_off[4] = {0, 5, 6, 13};
        CHECK(sw_conv3x3(&x, h, 3, short_off, &u, stride, &bias, &add, 1, &y, &bad) == SW_ERR_ARG);
        sw_tensor *all[] = {&x, &w, &bias, &add, &y, &u};
        for (int i = 0; i < 6; i++)
            sw_tensor_free(all[i]);
    }
    char what[32];
    snprintf(what, sizeof what, "conv3x3 stride %d", stride);
    expect_near_cpu(got, sy[0] * co, 1e-5, what);
    free(hx);
    free(hw);
    free(hb);
    free(ha);
}

/* conv3x3_single over two images of odd sizes, into 16 channels. */
static void conv_single_pair(sw_backend *dev, sw_backend *cpu, int relu)
{
    const int64_t h = 5, c = 16, off[3] = {0, 3, 9};
    int64_t sx[2] = {h * off[2], 1}, sw[2] = {9, c}, sb[1] = {c}, sy[2] = {h * off[2], c};
    float *hx = random_floats((size_t)sx[0]), *hw = random_floats((size_t)(9 * c));
    float *hb = random_floats((size_t)c), *got[2];
    sw_backend *bs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
        sw_error err = {SW_OK, ""};
        sw_backend *b = bs[k];
        sw_tensor x = make(b, 2, sx, hx), w = make(b, 2, sw, hw), bias = make(b, 1, sb, hb);
        sw_tensor y = make(b, 2, sy, NULL);
        CHECK(sw_conv3x3_single(&x, h, 2, off, &w, &bias, relu, &y, &err) == SW_OK);
        got[k] = download(b, &y);
        sw_tensor *all[] = {&x, &w, &bias, &y};
        for (int i = 0; i < 4; i++)
            sw_tensor_free(all[i]);
    }
    char what[32];
    snprintf(what, sizeof what, "conv3x3_single relu %d", relu);
    expect_near_cpu(got, sy[0] * c, 1e-6, what);
    free(hx);
    free(hw);
    free(hb);
}

/* affine_relu_rows over the first 29 of every 40 floats: the CPU's bits. */
static void affine_relu_pair(sw_backend *dev, sw_backend *cpu)
{
    const int64_t n = 37, ld = 40, c = 29;
    int64_t ss[2] = {n, ld}, sc[1] = {c}, sd[2] = {n, c};
    float *hs = random_floats((size_t)(n * ld)), *hsc = random_floats((size_t)c);
    float *hsh = random_floats((size_t)c), *got[2];
    sw_backend *bs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
        sw_error err = {SW_OK, ""};
        sw_backend *b = bs[k];
        sw_tensor src = make(b, 2, ss, hs), scale = make(b, 1, sc, hsc),
                  shift = make(b, 1, sc, hsh);
        sw_tensor dst = make(b, 2, sd, NULL);
        CHECK(sw_affine_relu_rows(&src, ld, n, c, &scale, &shift, &dst, &err) == SW_OK);
        got[k] = download(b, &dst);
        sw_tensor *all[] = {&src, &scale, &shift, &dst};
        for (int i = 0; i < 4; i++)
            sw_tensor_free(all[i]);
    }
    CHECK(memcmp(got[0], got[1], (size_t)(n * c) * sizeof(float)) == 0);
    free(got[0]);
    free(got[1]);
    free(hs);
    free(hsc);
    free(hsh);
}

/* span_abs_pool: three windows of a span (one at its very end), 12
 * channels, pool 3: the CPU's bits; a window past the end refused. */
static void span_pool_pair(sw_backend *dev, sw_backend *cpu)
{
    const int64_t rows = 100, c = 12, batch = 3, t_out = 7, first[3] = {0, 50, 79};
    const int pool = 3;
    int64_t ss[2] = {rows, c}, sy[3] = {batch, t_out, c};
    float *hs = random_floats((size_t)(rows * c)), *shift = random_floats((size_t)(batch * c));
    float scale[3] = {0.5f, -1.75f, 3.0f}, *got[2];
    sw_backend *bs[2] = {cpu, dev};
    for (int k = 0; k < 2; k++) {
        sw_error err = {SW_OK, ""}, bad = {SW_OK, ""};
        sw_backend *b = bs[k];
        sw_tensor span = make(b, 2, ss, hs), y = make(b, 3, sy, NULL);
        CHECK(sw_span_abs_pool(&span, first, scale, shift, pool, &y, &err) == SW_OK);
        got[k] = download(b, &y);
        const int64_t past[3] = {0, 50, 80};
        CHECK(sw_span_abs_pool(&span, past, scale, shift, pool, &y, &bad) == SW_ERR_ARG);
        sw_tensor_free(&span);
        sw_tensor_free(&y);
    }
    CHECK(memcmp(got[0], got[1], (size_t)(batch * t_out * c) * sizeof(float)) == 0);
    free(got[0]);
    free(got[1]);
    free(hs);
    free(shift);
}

static void against_the_cpu(sw_backend *dev)
{
    sw_error err = {SW_OK, ""};
    sw_backend *cpu = NULL;
    CHECK(sw_cpu_backend_open(2, &cpu, &err) == SW_OK);
    if (!cpu)
        return;
    gather_linear_pair(dev, cpu, 53, 3, 20, 32, 1, 1);  /* CAM++'s local conv, small */
    gather_linear_pair(dev, cpu, 29, 9, 7, 13, 1, 0);   /* odd everything */
    gather_linear_pair(dev, cpu, 45, 1, 40, 200, 0, 1); /* a plain product, wide */
    for (int stride = 1; stride <= 2; stride++)
        conv3x3_pair(dev, cpu, stride);
    conv_single_pair(dev, cpu, 1);
    conv_single_pair(dev, cpu, 0);
    affine_relu_pair(dev, cpu);
    span_pool_pair(dev, cpu);
    CHECK(cpu->memory(cpu).allocated == 0);
    CHECK(dev->memory(dev).allocated == 0);
    cpu->destroy(cpu);
}

/* prepare_q8 (the backend's, or the core's host path) gives the host's
 * scales and row sums, and products equal to the scalar kernel's on the
 * host's quantization, bit for bit. */
static void test_prepare_q8(sw_backend *b, int n, int k)
{
    const int m = 5;
    sw_error err = {SW_OK, ""};
    float *hw = random_floats((size_t)n * k), *ha = random_floats((size_t)m * k);
    int8_t *qw = malloc((size_t)n * k), *qa = malloc((size_t)m * k);
    float *sw = malloc((size_t)n * sizeof *sw), *sa = malloc((size_t)m * sizeof *sa);
    int32_t *sums = malloc((size_t)n * sizeof *sums), *got_sums = malloc((size_t)n * sizeof *sums);
    float *want = calloc((size_t)m * n, sizeof *want);
    CHECK(hw && ha && qw && qa && sw && sa && sums && got_sums && want);
    sw_q8_quantize_rows(hw, n, k, k, qw, sw);
    sw_q8_row_sums(qw, n, k, sums);
    sw_q8_quantize_rows(ha, m, k, k, qa, sa);
    sw_q8_gemm_nt_scalar(m, 0, n, k, qa, sa, qw, sw, 0.0f, want, n);

    sw_tensor w = {0}, scale = {0}, sum = {0};
    CHECK(sw_prepare_q8(b, hw, SW_F32, n, k, &w, &scale, &sum, &err) == SW_OK);
    float *got_scale = download(b, &scale);
    CHECK(b->download(b, got_sums, sum.data, (size_t)n * sizeof *got_sums, &err) == SW_OK);
    CHECK(memcmp(got_scale, sw, (size_t)n * sizeof *sw) == 0);
    CHECK(memcmp(got_sums, sums, (size_t)n * sizeof *sums) == 0);
    int64_t sa_shape[2] = {m, k}, sc[2] = {m, n};
    sw_tensor a = make(b, 2, sa_shape, ha), c = make(b, 2, sc, NULL);
    CHECK(sw_matmul_q8(&a, &w, &scale, &sum, &c, 0.0f, &err) == SW_OK);
    float *got = download(b, &c);
    CHECK(memcmp(got, want, (size_t)m * n * sizeof *want) == 0);
    sw_tensor *all[] = {&w, &scale, &sum, &a, &c};
    for (int i = 0; i < 5; i++)
        sw_tensor_free(all[i]);
    void *host[] = {hw, ha, qw, qa, sw, sa, sums, got_sums, want, got_scale, got};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(2, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_fused_ops");
    srand(5);
    test_entries_match_answers(b);
    test_gather_linear(b, 37, 40, 32);  /* narrow: the CPU keeps its weight transposed */
    test_gather_linear(b, 37, 24, 200); /* wide: as loaded */
    test_conv3x3(b, 1, 8, 16);
    test_conv3x3(b, 2, 8, 16);
    test_conv3x3(b, 1, 3, 5); /* odd channels: where the backend takes them (the GPU) */
    test_conv3x3(b, 2, 3, 5);
    if (b->kind != SW_DEVICE_CPU)
        against_the_cpu(b);
    test_prepare_q8(b, 48, 64); /* whole blocks of 16 rows: the CPU packs them */
    test_prepare_q8(b, 7, 33);  /* too small to pack: row-major everywhere */
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
    return sw_check_summary("test_fused_ops");
}
