/* The ops the Whisper forward adds to the backend table (transpose, conv1d
 * and conv1d_work, gather/scatter of rows, attention, add over trailing
 * dimensions) on the CPU backend against naive loops, and their shape checks
 * in ops.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "check.h"
#include "ops.h"

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static sw_tensor make(sw_backend *b, int ndim, const int64_t *shape, int fill)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t;
    CHECK(sw_tensor_new(b, SW_F32, ndim, shape, &t, &err) == SW_OK);
    float *d = t.data;
    for (int64_t i = 0; i < sw_tensor_numel(&t); i++)
        d[i] = fill ? frand() : 0.0f;
    return t;
}

static sw_tensor make_ids(sw_backend *b, const int32_t *ids, int64_t n)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t;
    CHECK(sw_tensor_new(b, SW_I32, 1, &n, &t, &err) == SW_OK);
    memcpy(t.data, ids, (size_t)n * sizeof(int32_t));
    return t;
}

static void test_transpose_and_add(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t s[3] = {3, 5, 7}, st[3] = {3, 7, 5}, blk[2] = {5, 7};
    sw_tensor a = make(b, 3, s, 1), o = make(b, 3, st, 0), r = make(b, 2, blk, 1);
    sw_tensor sum = make(b, 3, s, 0);
    CHECK(sw_transpose(&a, &o, &err) == SW_OK);
    const float *A = a.data, *O = o.data, *R = r.data, *S = sum.data;
    int bad = 0;
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 7; j++)
                bad += O[(m * 7 + j) * 5 + i] != A[(m * 5 + i) * 7 + j];
    CHECK(bad == 0);
    CHECK(sw_transpose(&a, &sum, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    /* a [5,7] block repeats over the batch (positional embeddings) */
    CHECK(sw_add(&a, &r, &sum, &err) == SW_OK);
    bad = 0;
    for (int i = 0; i < 3 * 35; i++)
        bad += S[i] != A[i] + R[i % 35];
    CHECK(bad == 0);
    int64_t wrong[2] = {7, 5};
    sw_tensor w = make(b, 2, wrong, 1);
    CHECK(sw_add(&a, &w, &sum, &err) == SW_ERR_ARG);
    sw_tensor *all[] = {&a, &o, &r, &sum, &w};
    for (int i = 0; i < 5; i++)
        sw_tensor_free(all[i]);
}

static void test_conv1d(sw_backend *b, int stride)
{
    sw_error err = {SW_OK, ""};
    int B = 2, T = 23, C = 5, O = 9, K = 3, pad = 1;
    int T_out = (T + 2 * pad - K) / stride + 1;
    int64_t xs[3] = {B, T, C}, ws[3] = {O, C, K}, bs[1] = {O}, os[3] = {B, T_out, O};
    sw_tensor x = make(b, 3, xs, 1), w = make(b, 3, ws, 1), bias = make(b, 1, bs, 1);
    sw_tensor out = make(b, 3, os, 0);
    CHECK(sw_conv1d(&x, &w, &bias, stride, pad, &out, &err) == SW_OK);
    const float *X = x.data, *W = w.data, *BI = bias.data, *Y = out.data;
    double worst = 0.0;
    for (int n = 0; n < B; n++)
        for (int t = 0; t < T_out; t++)
            for (int o = 0; o < O; o++) {
                double s = BI[o];
                for (int c = 0; c < C; c++)
                    for (int k = 0; k < K; k++) {
                        int ti = t * stride + k - pad;
                        if (ti >= 0 && ti < T)
                            s += (double)X[(n * T + ti) * C + c] * W[(o * C + c) * K + k];
                    }
                worst = fmax(worst, fabs(s - Y[(n * T_out + t) * O + o]));
            }
    CHECK_NEAR(worst, 0.0, 1e-5);
    /* the output length must follow from stride and padding */
    int64_t bad_s[3] = {B, T_out + 1, O};
    sw_tensor bad = make(b, 3, bad_s, 0);
    CHECK(sw_conv1d(&x, &w, &bias, stride, pad, &bad, &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "conv1d") != NULL);
    sw_tensor *all[] = {&x, &w, &bias, &out, &bad};
    for (int i = 0; i < 5; i++)
        sw_tensor_free(all[i]);
}

/* conv1d_work (backend.h ABI 12): the columns in the caller's work give
 * conv1d's own bits; where the backend takes a work, one too small is
 * refused by name (the CPU has no entry: conv1d serves). */
static void test_conv1d_work(sw_backend *b, int stride)
{
    sw_error err = {SW_OK, ""};
    int B = 2, T = 23, C = 5, O = 9, K = 3, pad = 1;
    int T_out = (T + 2 * pad - K) / stride + 1;
    int64_t xs[3] = {B, T, C}, ws[3] = {O, C, K}, bs[1] = {O}, os[3] = {B, T_out, O};
    int64_t n = (int64_t)(SW_CONV1D_WORK_BYTES(T_out, C, K) / sizeof(float)), small = n - 1;
    sw_tensor x = make(b, 3, xs, 1), w = make(b, 3, ws, 1), bias = make(b, 1, bs, 1);
    sw_tensor own = make(b, 3, os, 0), lent = make(b, 3, os, 0);
    sw_tensor work = make(b, 1, &n, 0), little = make(b, 1, &small, 0);
    CHECK(sw_conv1d(&x, &w, &bias, stride, pad, &own, &err) == SW_OK);
    CHECK(sw_conv1d_work(&x, &w, &bias, stride, pad, &work, &lent, &err) == SW_OK);
    CHECK(memcmp(own.data, lent.data, sw_tensor_nbytes(&own)) == 0);
    if (b->conv1d_work) {
        CHECK(sw_conv1d_work(&x, &w, &bias, stride, pad, &little, &lent, &err) == SW_ERR_ARG);
        CHECK(strstr(err.msg, "work") != NULL);
    }
    sw_tensor *all[] = {&x, &w, &bias, &own, &lent, &work, &little};
    for (int i = 0; i < 7; i++)
        sw_tensor_free(all[i]);
}

static void test_gather_scatter(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t ts[2] = {6, 4}, os[2] = {4, 4};
    sw_tensor table = make(b, 2, ts, 1), out = make(b, 2, os, 0), dst = make(b, 2, ts, 0);
    int32_t idv[4] = {5, 0, 9, 2}; /* 9 is out of range: a zero row, skipped on scatter */
    sw_tensor ids = make_ids(b, idv, 4);
    CHECK(sw_gather_rows(&table, &ids, &out, &err) == SW_OK);
    const float *TB = table.data, *O = out.data, *D = dst.data;
    int bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            bad += O[i * 4 + j] != (idv[i] < 6 ? TB[idv[i] * 4 + j] : 0.0f);
    CHECK(bad == 0);
    CHECK(sw_scatter_rows(&out, &ids, &dst, &err) == SW_OK);
    bad = 0;
    for (int r = 0; r < 6; r++)
        for (int j = 0; j < 4; j++) {
            float want = (r == 5 || r == 0 || r == 2) ? TB[r * 4 + j] : 0.0f;
            bad += D[r * 4 + j] != want;
        }
    CHECK(bad == 0);
    CHECK(sw_gather_rows(&table, &table, &out, &err) == SW_ERR_ARG); /* ids must be int32 */
    sw_tensor *all[] = {&table, &out, &dst, &ids};
    for (int i = 0; i < 4; i++)
        sw_tensor_free(all[i]);
}

/* Naive attention in double for one query row. */
static void ref_attention(const float *q, const float *k, const float *v, int64_t tq, int64_t d,
                          int64_t tkv, int heads, int64_t kv_len, int64_t causal, float scale,
                          int64_t bq, int64_t bk, int64_t i, int h, double *out, double *p)
{
    int64_t dh = d / heads, n = kv_len;
    if (causal >= 0 && causal + i + 1 < n)
        n = causal + i + 1;
    const float *qi = q + (bq * tq + i) * d + h * dh;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t t = 0; t < n; t++) {
        double s = 0.0;
        for (int64_t c = 0; c < dh; c++)
            s += (double)qi[c] * k[(bk * tkv + t) * d + h * dh + c];
        p[t] = s * scale;
        mx = fmax(mx, p[t]);
    }
    for (int64_t t = 0; t < n; t++)
        sum += (p[t] = exp(p[t] - mx));
    for (int64_t t = 0; t < kv_len; t++)
        p[t] = t < n ? p[t] / sum : 0.0;
    for (int64_t c = 0; c < dh; c++) {
        double s = 0.0;
        for (int64_t t = 0; t < n; t++)
            s += p[t] * v[(bk * tkv + t) * d + h * dh + c];
        out[c] = s;
    }
}

static void test_attention(sw_backend *b, int64_t tq, int64_t causal, int with_probs)
{
    sw_error err = {SW_OK, ""};
    int heads = 3;
    int64_t B = 4, Bk = 2, d = 3 * 8, tkv = 40, kv_len = causal >= 0 ? causal + tq : 37;
    int64_t qs[3] = {B, tq, d}, ks[3] = {Bk, tkv, d}, ps[4] = {B, heads, tq, kv_len};
    sw_tensor q = make(b, 3, qs, 1), k = make(b, 3, ks, 1), v = make(b, 3, ks, 1);
    sw_tensor out = make(b, 3, qs, 0), probs = make(b, 4, ps, 0);
    sw_attention_params p = {heads, kv_len, causal, 1.0f / sqrtf(8.0f), NULL};
    CHECK(sw_attention(&q, &k, &v, &p, &out, with_probs ? &probs : NULL, &err) == SW_OK);
    double worst = 0.0, worst_p = 0.0, ref[8], rp[64];
    const float *O = out.data, *P = probs.data;
    for (int64_t bq = 0; bq < B; bq++)
        for (int h = 0; h < heads; h++)
            for (int64_t i = 0; i < tq; i++) {
                ref_attention(q.data, k.data, v.data, tq, d, tkv, heads, kv_len, causal, p.scale,
                              bq, bq / (B / Bk), i, h, ref, rp);
                for (int c = 0; c < 8; c++)
                    worst = fmax(worst, fabs(ref[c] - O[(bq * tq + i) * d + h * 8 + c]));
                for (int64_t t = 0; with_probs && t < kv_len; t++)
                    worst_p =
                        fmax(worst_p, fabs(rp[t] - P[((bq * heads + h) * tq + i) * kv_len + t]));
            }
    CHECK_NEAR(worst, 0.0, 2e-6);
    CHECK_NEAR(worst_p, 0.0, 2e-6);
    /* a query batch that is not a multiple of the key batch is refused */
    int64_t k3[3] = {3, tkv, d};
    sw_tensor k_bad = make(b, 3, k3, 0);
    CHECK(sw_attention(&q, &k_bad, &k_bad, &p, &out, NULL, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    p.kv_len = tkv + 1;
    CHECK(sw_attention(&q, &k, &v, &p, &out, NULL, &err) == SW_ERR_ARG);
    sw_tensor *all[] = {&q, &k, &v, &out, &probs, &k_bad};
    for (int i = 0; i < 6; i++)
        sw_tensor_free(all[i]);
}

/* Keys up to a block's 48 KiB of shared memory on the GPU, counting the
 * kernel's static scratch: the longest that fits is right, one more is a
 * clear argument error there (never a failed launch); the CPU takes both. */
static void test_attention_shared_limit(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    const int64_t d = 64, fits = 12288 - 64 - 32, tkv = fits + 32;
    int64_t qs[3] = {1, 1, d}, ks[3] = {1, tkv, d};
    sw_tensor q = make(b, 3, qs, 1), k = make(b, 3, ks, 1), v = make(b, 3, ks, 1);
    sw_tensor out = make(b, 3, qs, 0);
    sw_attention_params p = {1, fits, -1, 0.125f, NULL};
    CHECK(sw_attention(&q, &k, &v, &p, &out, NULL, &err) == SW_OK);
    double *ref = malloc(sizeof(double) * 64), *rp = malloc(sizeof(double) * (size_t)tkv);
    CHECK(ref && rp);
    if (ref && rp) {
        ref_attention(q.data, k.data, v.data, 1, d, tkv, 1, fits, -1, p.scale, 0, 0, 0, 0, ref, rp);
        double worst = 0.0;
        for (int c = 0; c < d; c++)
            worst = fmax(worst, fabs(ref[c] - ((float *)out.data)[c]));
        CHECK_NEAR(worst, 0.0, 2e-6);
    }
    p.kv_len = fits + 32; /* the dynamic part alone is 48 KiB */
    sw_status st = sw_attention(&q, &k, &v, &p, &out, NULL, &err);
    if (b->kind == SW_DEVICE_CUDA)
        CHECK(st == SW_ERR_ARG && strstr(err.msg, "48 KiB") != NULL);
    else
        CHECK(st == SW_OK);
    sw_error_clear(&err);
    free(ref);
    free(rp);
    sw_tensor *all[] = {&q, &k, &v, &out};
    for (int i = 0; i < 4; i++)
        sw_tensor_free(all[i]);
}

/* A length read from device memory (ABI 10, what a captured decoder step
 * replays with): keys kv_len + L and causal offset L give what the host's
 * figures give, bit for bit, in the row kernel (1 query row) and the tiled
 * one (20), over a cache of 448 rows; the length changes between calls
 * without the call changing. A backend without it (the CPU) refuses it by
 * name, as it refuses probs beside it. */
static void test_attention_device_length(sw_backend *b, int64_t tq)
{
    sw_error err = {SW_OK, ""};
    int heads = 6;
    int64_t B = 5, d = heads * 64, tkv = 448, qs[3] = {B, tq, d}, ks[3] = {B, tkv, d};
    int64_t one = 1, ps[4] = {B, heads, tq, tq};
    sw_tensor q = make(b, 3, qs, 1), k = make(b, 3, ks, 1), v = make(b, 3, ks, 1);
    sw_tensor host = make(b, 3, qs, 0), dev = make(b, 3, qs, 0), probs = make(b, 4, ps, 0);
    sw_tensor len = {0};
    CHECK(sw_tensor_new(b, SW_I32, 1, &one, &len, &err) == SW_OK);
    sw_attention_params p = {heads, tq, 0, 0.125f, (const int32_t *)len.data};
    if (!b->supports || !b->supports(b, SW_CAP_DEVICE_LENGTH, 0, 0)) {
        CHECK(sw_attention(&q, &k, &v, &p, &dev, NULL, &err) == SW_ERR_ARG &&
              strstr(err.msg, "device memory") != NULL);
        sw_error_clear(&err);
    } else {
        int32_t lengths[3] = {0, 37, (int32_t)(tkv - tq)};
        for (int i = 0; i < 3; i++) {
            CHECK(b->upload(b, len.data, &lengths[i], sizeof(int32_t), &err) == SW_OK);
            sw_attention_params at_host = {heads, lengths[i] + tq, lengths[i], 0.125f, NULL};
            CHECK(sw_attention(&q, &k, &v, &at_host, &host, NULL, &err) == SW_OK);
            CHECK(sw_attention(&q, &k, &v, &p, &dev, NULL, &err) == SW_OK);
            CHECK(memcmp(host.data, dev.data, sw_tensor_nbytes(&dev)) == 0);
        }
        CHECK(sw_attention(&q, &k, &v, &p, &dev, &probs, &err) == SW_ERR_ARG &&
              strstr(err.msg, "probs") != NULL);
        sw_error_clear(&err);
    }
    sw_tensor *all[] = {&q, &k, &v, &host, &dev, &probs, &len};
    for (int i = 0; i < 7; i++)
        sw_tensor_free(all[i]);
}

/* Whisper's shapes against the CPU backend's attention, float by float, and
 * sampled rows against the double reference: on the GPU (the emulator's
 * CUDA backend) these many query rows take the tiled kernel (attention.cu),
 * on the CPU they check the CPU against the reference. batch B queries over
 * Bk key batches (beams sharing one audio's keys when B > Bk). */
static void test_attention_whisper_shape(sw_backend *b, sw_backend *cpu, int64_t B, int64_t Bk,
                                         int heads, int64_t dh, int64_t tq, int64_t tkv,
                                         int64_t kv_len, int64_t causal)
{
    sw_error err = {SW_OK, ""};
    int64_t d = heads * dh, qs[3] = {B, tq, d}, ks[3] = {Bk, tkv, d};
    sw_tensor q = make(b, 3, qs, 1), k = make(b, 3, ks, 1), v = make(b, 3, ks, 1);
    sw_tensor out = make(b, 3, qs, 0);
    sw_tensor cq = make(cpu, 3, qs, 0), ck = make(cpu, 3, ks, 0), cv = make(cpu, 3, ks, 0);
    sw_tensor cout = make(cpu, 3, qs, 0);
    memcpy(cq.data, q.data, sw_tensor_nbytes(&q));
    memcpy(ck.data, k.data, sw_tensor_nbytes(&k));
    memcpy(cv.data, v.data, sw_tensor_nbytes(&v));
    sw_attention_params p = {heads, kv_len, causal, 1.0f / sqrtf((float)dh), NULL};
    CHECK(sw_attention(&q, &k, &v, &p, &out, NULL, &err) == SW_OK);
    CHECK(sw_attention(&cq, &ck, &cv, &p, &cout, NULL, &err) == SW_OK);
    const float *O = out.data, *C = cout.data;
    double worst = 0.0;
    for (int64_t i = 0; i < sw_tensor_numel(&out); i++)
        worst = fmax(worst, fabs((double)O[i] - C[i])); /* a NaN fails below */
    CHECK_NEAR(worst, 0.0, 2e-6);
    double *ref = malloc(sizeof(double) * (size_t)dh), *rp = malloc(sizeof(double) * (size_t)tkv);
    CHECK(ref && rp);
    double worst_ref = 0.0;
    for (int64_t bq = 0; ref && rp && bq < B; bq++)
        for (int h = 0; h < heads; h++)
            for (int64_t i = (bq + h) % 7; i < tq; i += 7) { /* every seventh row, all tiles */
                ref_attention(q.data, k.data, v.data, tq, d, tkv, heads, kv_len, causal, p.scale,
                              bq, bq / (B / Bk), i, h, ref, rp);
                for (int64_t c = 0; c < dh; c++)
                    worst_ref = fmax(worst_ref, fabs(ref[c] - O[(bq * tq + i) * d + h * dh + c]));
            }
    CHECK_NEAR(worst_ref, 0.0, 2e-6);
    if (!(worst <= 2e-6 && worst_ref <= 2e-6))
        fprintf(stderr, "attention B %lld/%lld, %d heads of %lld, %lld x %lld, causal %lld\n",
                (long long)B, (long long)Bk, heads, (long long)dh, (long long)tq, (long long)kv_len,
                (long long)causal);
    free(ref);
    free(rp);
    sw_tensor *all[] = {&q, &k, &v, &out, &cq, &ck, &cv, &cout};
    for (int i = 0; i < 8; i++)
        sw_tensor_free(all[i]);
}

/* Sixteen query rows over more keys than a block of the row kernel holds in
 * its 48 KiB (test_attention_shared_limit): the GPU takes them in the tiled
 * kernel, which streams the keys, so this also proves that kernel ran. */
static void test_attention_many_keys(sw_backend *b, sw_backend *cpu)
{
    test_attention_whisper_shape(b, cpu, 1, 1, 1, 64, 16, 13000, 12999, -1);
}

/* Keys and values head by head, [B_kv, H, T_kv, d_head] (the CPU's cross-
 * attention form): the same bits as the [B_kv, T_kv, D] form on every path
 * (fused decoding rows, causal prompts, sgemm), d_head a multiple of eight or
 * not; a backend without the form (the GPU's) refuses it by name. */
static void test_attention_head_major(sw_backend *b, int64_t tq, int64_t causal, int64_t dh,
                                      int with_probs)
{
    sw_error err = {SW_OK, ""};
    int heads = 3;
    int64_t B = 4, Bk = 2, d = heads * dh, tkv = 40, kv_len = causal >= 0 ? causal + tq : 37;
    int64_t qs[3] = {B, tq, d}, ks[3] = {Bk, tkv, d}, hs[4] = {Bk, heads, tkv, dh};
    int64_t ps[4] = {B, heads, tq, kv_len};
    sw_tensor q = make(b, 3, qs, 1), k = make(b, 3, ks, 1), v = make(b, 3, ks, 1);
    sw_tensor kh = make(b, 4, hs, 0), vh = make(b, 4, hs, 0);
    sw_tensor out = make(b, 3, qs, 0), out_h = make(b, 3, qs, 0);
    sw_tensor probs = make(b, 4, ps, 0), probs_h = make(b, 4, ps, 0);
    float *K = k.data, *V = v.data, *KH = kh.data, *VH = vh.data;
    for (int64_t bk = 0; bk < Bk; bk++)
        for (int h = 0; h < heads; h++)
            for (int64_t t = 0; t < tkv; t++)
                for (int64_t c = 0; c < dh; c++) {
                    KH[((bk * heads + h) * tkv + t) * dh + c] = K[(bk * tkv + t) * d + h * dh + c];
                    VH[((bk * heads + h) * tkv + t) * dh + c] = V[(bk * tkv + t) * d + h * dh + c];
                }
    sw_attention_params p = {heads, kv_len, causal, 1.0f / sqrtf((float)dh), NULL};
    sw_status st = sw_attention(&q, &kh, &vh, &p, &out_h, with_probs ? &probs_h : NULL, &err);
    if (b->kind == SW_DEVICE_CUDA) {
        CHECK(st == SW_ERR_ARG && strstr(err.msg, "three dimensions") != NULL);
        sw_error_clear(&err);
    } else {
        CHECK(st == SW_OK);
        CHECK(sw_attention(&q, &k, &v, &p, &out, with_probs ? &probs : NULL, &err) == SW_OK);
        CHECK(memcmp(out.data, out_h.data, sw_tensor_nbytes(&out)) == 0);
        CHECK(!with_probs || memcmp(probs.data, probs_h.data, sw_tensor_nbytes(&probs)) == 0);
        /* and both near the double reference */
        double worst = 0.0, ref[64], rp[64];
        const float *O = out_h.data;
        for (int64_t bq = 0; bq < B; bq++)
            for (int h = 0; h < heads; h++)
                for (int64_t i = 0; i < tq; i++) {
                    ref_attention(q.data, k.data, v.data, tq, d, tkv, heads, kv_len, causal,
                                  p.scale, bq, bq / (B / Bk), i, h, ref, rp);
                    for (int64_t c = 0; c < dh; c++)
                        worst = fmax(worst, fabs(ref[c] - O[(bq * tq + i) * d + h * dh + c]));
                }
        CHECK_NEAR(worst, 0.0, 2e-6);
    }
    /* four dimensions that are not these heads are refused in ops.c */
    sw_attention_params p2 = {1, kv_len, causal, p.scale, NULL};
    sw_tensor x2 = kh;
    CHECK(sw_attention(&q, &kh, &vh, &p2, &out_h, NULL, &err) == SW_ERR_ARG &&
          strstr(err.msg, "head-major") != NULL);
    sw_error_clear(&err);
    x2.shape[3] = dh + 1;
    CHECK(sw_attention(&q, &x2, &x2, &p, &out_h, NULL, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor *all[] = {&q, &k, &v, &kh, &vh, &out, &out_h, &probs, &probs_h};
    for (int i = 0; i < 9; i++)
        sw_tensor_free(all[i]);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(2, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_whisper_ops");
    srand(7);
    test_transpose_and_add(b);
    test_conv1d(b, 1);
    test_conv1d(b, 2);
    test_conv1d_work(b, 1);
    test_conv1d_work(b, 2);
    test_gather_scatter(b);
    test_attention(b, 1, -1, 0);  /* decoding, cross-attention: fused path */
    test_attention(b, 3, 5, 1);   /* a prompt over a cache, causal, weights kept */
    test_attention(b, 20, -1, 0); /* the encoder: sgemm path */
    test_attention(b, 20, 0, 1);  /* a long prompt: sgemm path, causal, weights kept */
    test_attention_shared_limit(b);
    test_attention_device_length(b, 1);          /* a decoder step: the row kernel */
    test_attention_device_length(b, 20);         /* a prompt's rows: the tiles */
    test_attention_head_major(b, 1, -1, 64, 0);  /* Whisper's cross-attention while decoding */
    test_attention_head_major(b, 5, -1, 8, 1);   /* five query rows, weights kept */
    test_attention_head_major(b, 3, 5, 5, 1);    /* d_head not a multiple of eight, causal */
    test_attention_head_major(b, 20, -1, 64, 0); /* a prompt's rows: the sgemm path */
    sw_backend *cpu = NULL;
    CHECK(sw_cpu_backend_open(2, &cpu, &err) == SW_OK);
    if (cpu) {
        /* tiny's encoder: 1500 frames, six heads of 64 */
        test_attention_whisper_shape(b, cpu, 1, 1, 6, 64, 1500, 1500, 1500, -1);
        /* a decoder prompt of 20 rows over a cache of 37 (448 rows allocated),
         * five beams; and 70 rows, two query tiles, after 100 */
        test_attention_whisper_shape(b, cpu, 5, 5, 6, 64, 20, 448, 57, 37);
        test_attention_whisper_shape(b, cpu, 2, 2, 6, 64, 70, 448, 170, 100);
        /* a prompt's rows against the audio: two audios of five beams each */
        test_attention_whisper_shape(b, cpu, 10, 2, 6, 64, 24, 1500, 1500, -1);
        /* heads narrower than a tile, one not a multiple of four */
        test_attention_whisper_shape(b, cpu, 2, 1, 3, 40, 33, 50, 45, -1);
        test_attention_whisper_shape(b, cpu, 1, 1, 2, 5, 17, 30, 20, 3);
        test_attention_many_keys(b, cpu);
        CHECK(cpu->memory(cpu).allocated == 0);
        cpu->destroy(cpu);
    }
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
    return sw_check_summary("test_whisper_ops");
}
