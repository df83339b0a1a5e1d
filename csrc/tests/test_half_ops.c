/* Half-precision weights (compute_type "float16", "bfloat16") through the
 * backend table: matmul with a float16/bfloat16 b (cuBLAS GemmEx, float32
 * sums), conv1d with a half weight, gather_rows from a half table.
 *
 * On the CUDA backend (the emulator in CI) each is held against the CPU
 * backend's float32 path two ways:
 * - on the same rounded inputs (the activation and weight rounded to the
 *   half type first) the results agree to float32 summation order:
 *   |c - ref| <= 1e-5 * sum_k |a_ik b_kj|;
 * - against the unrounded float32 product the difference stays within what
 *   rounding both inputs allows: each product a*b moves by at most
 *   (2u + u^2)|a b| with u = 2^-11 (float16) or 2^-8 (bfloat16), so
 *   |c - c32| <= (2u + u^2 + 1e-5) * sum_k |a_ik b_kj|.
 * The CPU backend computes float32, bfloat16 and int8 products, and keeps float16 weights as a
 * Whisper file holds them (mapped, not copied) and widens them as it reads
 * them: a [n, k] weight multiplied transposed, and a table of rows to
 * gather. Widening is exact, so every output equals the float32 product
 * with the widened weight bit for bit, at every row count (the few-rows
 * kernel, and sgemm). Any other half operand there is a clear SW_ERR_ARG
 * naming the backend that refuses it (ops.c asks the capabilities
 * SW_CAP_HALF_WEIGHTS, SW_CAP_HALF_TRANSPOSED_B and SW_CAP_HALF_TABLE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "check.h"
#include "elementwise_math.h"
#include "ops.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static float round_to(sw_dtype d, float v)
{
    return d == SW_F16 ? sw_f16_to_f32(sw_f32_to_f16(v)) : sw_bf16_to_f32(sw_f32_to_bf16(v));
}

static double unit(sw_dtype d)
{
    return d == SW_F16 ? 0x1p-11 : 0x1p-8;
}

/* A tensor on `b` filled from host values (the emulator's device memory is
 * host memory; the CPU's is too). */
static sw_tensor filled(sw_backend *b, sw_dtype dtype, int ndim, const int64_t *shape,
                        const float *v)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t, f;
    memset(&t, 0, sizeof t);
    CHECK(sw_tensor_new(b, dtype, ndim, shape, &t, &err) == SW_OK);
    if (dtype == SW_F32) {
        memcpy(t.data, v, sizeof(float) * (size_t)sw_tensor_numel(&t));
        return t;
    }
    CHECK(sw_tensor_new(b, SW_F32, ndim, shape, &f, &err) == SW_OK);
    memcpy(f.data, v, sizeof(float) * (size_t)sw_tensor_numel(&f));
    CHECK(sw_convert(&f, &t, &err) == SW_OK);
    CHECK(b->synchronize(b, &err) == SW_OK);
    sw_tensor_free(&f);
    return t;
}

static float *random_values(int64_t n, float scale)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = frand() * scale;
    return v;
}

/* c = alpha * a . op(b) + beta * c0 with a [m, k]; b [n, k] (trans_b) or [k, n]. */
static void matmul_case(sw_backend *gpu, sw_backend *cpu, sw_dtype dtype, int64_t m, int64_t n,
                        int64_t k, int trans_b, float alpha, float beta, int a_half)
{
    sw_error err = {SW_OK, ""};
    float *a = random_values(m * k, 3.0f), *b = random_values(n * k, 0.2f);
    float *c0 = random_values(m * n, 1.0f);
    float *ar = malloc(sizeof(float) * (size_t)(m * k)),
          *br = malloc(sizeof(float) * (size_t)(n * k));
    for (int64_t i = 0; i < m * k; i++)
        ar[i] = round_to(dtype, a[i]);
    for (int64_t i = 0; i < n * k; i++)
        br[i] = round_to(dtype, b[i]);
    int64_t sa[2] = {m, k}, sc[2] = {m, n};
    int64_t sb[2] = {trans_b ? n : k, trans_b ? k : n};

    sw_tensor ga = filled(gpu, a_half ? dtype : SW_F32, 2, sa, a),
              gb = filled(gpu, dtype, 2, sb, b);
    sw_tensor gc = filled(gpu, SW_F32, 2, sc, c0);
    CHECK(sw_matmul(&ga, &gb, &gc, trans_b, alpha, beta, &err) == SW_OK);
    CHECK(gpu->synchronize(gpu, &err) == SW_OK);
    if (err.code != SW_OK)
        fprintf(stderr, "%s\n", err.msg);

    /* CPU float32 references: on the rounded inputs, and on the originals */
    sw_tensor ra = filled(cpu, SW_F32, 2, sa, ar), rb = filled(cpu, SW_F32, 2, sb, br);
    sw_tensor rc = filled(cpu, SW_F32, 2, sc, c0);
    sw_tensor xa = filled(cpu, SW_F32, 2, sa, a), xb = filled(cpu, SW_F32, 2, sb, b);
    sw_tensor xc = filled(cpu, SW_F32, 2, sc, c0);
    CHECK(sw_matmul(&ra, &rb, &rc, trans_b, alpha, beta, &err) == SW_OK);
    CHECK(sw_matmul(&xa, &xb, &xc, trans_b, alpha, beta, &err) == SW_OK);

    const float *got = gc.data, *same = rc.data, *f32 = xc.data;
    double u = unit(dtype), worst_same = 0, worst_f32 = 0;
    int bad_same = 0, bad_f32 = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double mag = fabs(beta * c0[i * n + j]);
            for (int64_t l = 0; l < k; l++) {
                float bv = trans_b ? b[j * k + l] : b[l * n + j];
                mag += fabs(alpha * a[i * k + l] * bv);
            }
            mag += 1e-30;
            double d_same = fabs(got[i * n + j] - same[i * n + j]) / mag;
            double d_f32 = fabs(got[i * n + j] - f32[i * n + j]) / mag;
            worst_same = d_same > worst_same ? d_same : worst_same;
            worst_f32 = d_f32 > worst_f32 ? d_f32 : worst_f32;
            bad_same += !(d_same <= 1e-5);
            bad_f32 += !(d_f32 <= 2 * u + u * u + 1e-5);
        }
    printf("matmul %s m=%lld n=%lld k=%lld%s%s: max |diff| / sum|ab|: %.2e on the rounded inputs, "
           "%.2e from float32 (bound %.2e)\n",
           sw_dtype_name(dtype), (long long)m, (long long)n, (long long)k, trans_b ? " b^T" : "",
           a_half ? " a half" : "", worst_same, worst_f32, 2 * u + u * u + 1e-5);
    CHECK(bad_same == 0);
    CHECK(bad_f32 == 0);
    /* the rounding is visible: a half product is not the float32 one */
    CHECK(worst_f32 > 1e-6);
    sw_tensor *all[] = {&ga, &gb, &gc, &ra, &rb, &rc, &xa, &xb, &xc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
    free(a);
    free(b);
    free(c0);
    free(ar);
    free(br);
}

/* Whisper's conv1: x [B, T, C_in], w [C_out, C_in, 3], stride 1, pad 1. The
 * GPU rounds x's columns and w to the half type; the CPU reference gets them
 * rounded the same way. */
static void conv_case(sw_backend *gpu, sw_backend *cpu, sw_dtype dtype, int stride)
{
    sw_error err = {SW_OK, ""};
    int64_t bsz = 2, t = 37, ci = 20, co = 24, kw = 3, t_out = (t + 2 - kw) / stride + 1;
    int64_t sx[3] = {bsz, t, ci}, sw[3] = {co, ci, kw}, so[3] = {bsz, t_out, co};
    float *x = random_values(bsz * t * ci, 2.0f), *w = random_values(co * ci * kw, 0.3f);
    float *bias = random_values(co, 1.0f), *junk = random_values(bsz * t_out * co, 1.0f);
    float *xr = malloc(sizeof(float) * (size_t)(bsz * t * ci)),
          *wr = malloc(sizeof(float) * (size_t)(co * ci * kw));
    for (int64_t i = 0; i < bsz * t * ci; i++)
        xr[i] = round_to(dtype, x[i]);
    for (int64_t i = 0; i < co * ci * kw; i++)
        wr[i] = round_to(dtype, w[i]);
    sw_tensor gx = filled(gpu, SW_F32, 3, sx, x), gw = filled(gpu, dtype, 3, sw, w);
    sw_tensor gbias = filled(gpu, SW_F32, 1, &co, bias), go = filled(gpu, SW_F32, 3, so, junk);
    sw_tensor rx = filled(cpu, SW_F32, 3, sx, xr), rw = filled(cpu, SW_F32, 3, sw, wr);
    sw_tensor rbias = filled(cpu, SW_F32, 1, &co, bias), ro = filled(cpu, SW_F32, 3, so, junk);
    CHECK(sw_conv1d(&gx, &gw, &gbias, stride, 1, &go, &err) == SW_OK);
    CHECK(gpu->synchronize(gpu, &err) == SW_OK);
    CHECK(sw_conv1d(&rx, &rw, &rbias, stride, 1, &ro, &err) == SW_OK);
    const float *got = go.data, *want = ro.data;
    double worst = 0;
    for (int64_t i = 0; i < bsz * t_out * co; i++) {
        double d = fabs(got[i] - want[i]);
        worst = d > worst ? d : worst;
    }
    printf("conv1d %s stride %d: max |diff| %.2e from the CPU on rounded inputs\n",
           sw_dtype_name(dtype), stride, worst);
    CHECK(worst <= 1e-4); /* |x w| sums of 60 terms below 0.6 each: f32 order only */
    sw_tensor *all[] = {&gx, &gw, &gbias, &go, &rx, &rw, &rbias, &ro};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
    free(x);
    free(w);
    free(bias);
    free(junk);
    free(xr);
    free(wr);
}

/* The token embedding's lookups from a half table: the rows come back widened,
 * exactly; an id out of range gives zeros. */
static void gather_case(sw_backend *gpu, sw_dtype dtype)
{
    sw_error err = {SW_OK, ""};
    int64_t st[2] = {50, 16}, n_ids = 5, so[2] = {5, 16};
    float *table = random_values(50 * 16, 4.0f);
    sw_tensor gt = filled(gpu, dtype, 2, st, table), go = filled(gpu, SW_F32, 2, so, table);
    sw_tensor ids;
    CHECK(sw_tensor_new(gpu, SW_I32, 1, &n_ids, &ids, &err) == SW_OK);
    int32_t want_ids[5] = {3, 49, 0, -1, 50};
    memcpy(ids.data, want_ids, sizeof want_ids);
    CHECK(sw_gather_rows(&gt, &ids, &go, &err) == SW_OK);
    CHECK(gpu->synchronize(gpu, &err) == SW_OK);
    const float *got = go.data;
    int bad = 0;
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 16; c++) {
            int id = want_ids[r];
            float want = id >= 0 && id < 50 ? round_to(dtype, table[id * 16 + c]) : 0.0f;
            bad += got[r * 16 + c] != want;
        }
    CHECK(bad == 0);
    sw_tensor_free(&gt);
    sw_tensor_free(&go);
    sw_tensor_free(&ids);
    free(table);
}

static sw_tensor copy_of(sw_backend *b, const sw_tensor *t)
{
    return filled(b, SW_F32, t->ndim, t->shape, t->data);
}

/* Float16 weights on the CPU: equal to their widened float32 copy, bit for
 * bit, through every path of the product and through gather_rows; the
 * operands it does not take are refused by name. */
static void cpu_half_weights(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *cpu = NULL;
    CHECK(sw_cpu_backend_open(2, &cpu, &err) == SW_OK);
    if (!cpu)
        return;
    int64_t n = 517, k = 83, ws[2] = {n, k};
    float *wv = random_values(n * k, 1.0f);
    for (int64_t i = 0; i < n * k; i++)
        wv[i] = round_to(SW_F16, wv[i]);
    sw_tensor wh = filled(cpu, SW_F16, 2, ws, wv), wf = filled(cpu, SW_F32, 2, ws, wv);
    /* one row (greedy), beams, a batch of windows, the kernel's last row
     * count, and sgemm's (the encoder's) */
    const int64_t rows[] = {1, 2, 5, 40, 63, 64, 150};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        int64_t as[2] = {rows[r], k}, cs[2] = {rows[r], n};
        float *av = random_values(rows[r] * k, 1.0f), *cv = random_values(rows[r] * n, 1.0f);
        sw_tensor a = filled(cpu, SW_F32, 2, as, av), ch = filled(cpu, SW_F32, 2, cs, cv);
        sw_tensor cf = copy_of(cpu, &ch);
        CHECK(sw_matmul(&a, &wh, &ch, 1, 0.75f, 0.5f, &err) == SW_OK);
        CHECK(sw_matmul(&a, &wf, &cf, 1, 0.75f, 0.5f, &err) == SW_OK);
        CHECK(memcmp(ch.data, cf.data, sw_tensor_nbytes(&cf)) == 0);
        sw_tensor_free(&a);
        sw_tensor_free(&ch);
        sw_tensor_free(&cf);
        free(av);
        free(cv);
    }
    int32_t id[5] = {3, 0, 516, -1, 600};
    int64_t is[1] = {5}, os[2] = {5, k};
    sw_tensor ids, oh, of;
    CHECK(sw_tensor_new(cpu, SW_I32, 1, is, &ids, &err) == SW_OK);
    memcpy(ids.data, id, sizeof id);
    CHECK(sw_tensor_new(cpu, SW_F32, 2, os, &oh, &err) == SW_OK);
    CHECK(sw_tensor_new(cpu, SW_F32, 2, os, &of, &err) == SW_OK);
    CHECK(sw_gather_rows(&wh, &ids, &oh, &err) == SW_OK);
    CHECK(sw_gather_rows(&wf, &ids, &of, &err) == SW_OK);
    CHECK(memcmp(oh.data, of.data, sw_tensor_nbytes(&of)) == 0);
    /* refused: b [k, n] in half or bfloat16, a half convolution; a bfloat16
     * weight [n, k] is compute_type "bfloat16"'s product (bf16_gemm.h) */
    int64_t ks[2] = {k, n}, as[2] = {4, k}, cs[2] = {4, n};
    float *zero = calloc((size_t)(n * k), sizeof(float));
    sw_tensor a = filled(cpu, SW_F32, 2, as, zero), c = filled(cpu, SW_F32, 2, cs, zero);
    sw_tensor kn = filled(cpu, SW_F16, 2, ks, zero), bf = filled(cpu, SW_BF16, 2, ws, zero);
    sw_tensor bkn = filled(cpu, SW_BF16, 2, ks, zero);
    CHECK(sw_matmul(&a, &kn, &c, 0, 1.0f, 0.0f, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "float16") && strstr(err.msg, "the cpu backend does not take"));
    sw_error_clear(&err);
    CHECK(sw_matmul(&a, &bkn, &c, 0, 1.0f, 0.0f, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "bfloat16") && strstr(err.msg, "the cpu backend does not take"));
    sw_error_clear(&err);
    CHECK(sw_matmul(&a, &bf, &c, 1, 1.0f, 0.0f, &err) == SW_OK);
    int64_t xs[3] = {1, 8, 4}, cw[3] = {4, 4, 3}, co[3] = {1, 6, 4};
    sw_tensor x = filled(cpu, SW_F32, 3, xs, zero), w3 = filled(cpu, SW_F16, 3, cw, zero);
    sw_tensor y = filled(cpu, SW_F32, 3, co, zero);
    CHECK(sw_conv1d(&x, &w3, NULL, 1, 0, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor *all[] = {&wh, &wf, &ids, &oh, &of, &a, &c, &kn, &bf, &bkn, &x, &w3, &y};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
    free(zero);
    free(wv);
    sw_pool_stats s = cpu->memory(cpu);
    CHECK(s.allocated == 0);
    cpu->destroy(cpu);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL, *cpu = NULL;
    CHECK(sw_test_backend_open(0, &b, &err) == SW_OK);
    CHECK(sw_cpu_backend_open(1, &cpu, &err) == SW_OK);
    if (!b || !cpu)
        return sw_check_summary("test_half_ops");
    srand(7);
    cpu_half_weights();
    if (b->kind == SW_DEVICE_CUDA) {
        sw_dtype types[2] = {SW_F16, SW_BF16};
        for (int i = 0; i < 2; i++) {
            /* Whisper's shapes in small: a linear layer (b^T), the logits'
             * few rows against a tall table, and b [k, n]; beta 1 (the MLP's
             * accumulate), alpha != 1, and an already-half a (conv1d's
             * columns). */
            matmul_case(b, cpu, types[i], 67, 48, 96, 1, 1.0f, 0.0f, 0);
            matmul_case(b, cpu, types[i], 3, 517, 64, 1, 1.0f, 0.0f, 0);
            matmul_case(b, cpu, types[i], 33, 45, 70, 0, 0.5f, 1.0f, 0);
            matmul_case(b, cpu, types[i], 16, 24, 40, 1, 1.0f, 0.0f, 1);
            conv_case(b, cpu, types[i], 1);
            conv_case(b, cpu, types[i], 2);
            gather_case(b, types[i]);
        }
        /* a of another half type than b is refused */
        int64_t s[2] = {4, 4};
        float v[16] = {0};
        sw_tensor a = filled(b, SW_BF16, 2, s, v), w = filled(b, SW_F16, 2, s, v);
        sw_tensor c = filled(b, SW_F32, 2, s, v);
        CHECK(sw_matmul(&a, &w, &c, 1, 1.0f, 0.0f, &err) == SW_ERR_ARG);
        sw_error_clear(&err);
        sw_tensor_free(&a);
        sw_tensor_free(&w);
        sw_tensor_free(&c);
    }
    sw_pool_stats s = b->memory(b);
    CHECK(s.allocated == 0);
    b->destroy(b);
    s = cpu->memory(cpu);
    CHECK(s.allocated == 0);
    cpu->destroy(cpu);
    return sw_check_summary("test_half_ops");
}
