/* The ops pyannote's segmentation network adds to the backend table (leaky
 * ReLU, abs, max pooling, instance norm, log-softmax, LSTM layers) and the
 * strided conv1d of SincNet, and the embeddings' and VAD's pooling,
 * magnitude and L2 norm (ABI 5), on the CPU backend against naive loops, and
 * their shape checks in ops.c. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "check.h"
#include "cpu_affine_relu.h"
#include "cpu_dispatch.h"
#include "cpu_conv_single.h"
#include "cpu_gather_linear.h"
#include "cpu_span_pool.h"
#include "cpu_winograd.h"
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

static double max_diff(const float *a, const float *b, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        m = d > m || d != d ? d : m;
    }
    return m;
}

static void test_elementwise(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t s[3] = {2, 50, 3};
    sw_tensor a = make(b, 3, s, 1), o = make(b, 3, s, 0);
    const float *A = a.data, *O = o.data;
    CHECK(sw_leaky_relu(&a, 0.01f, &o, &err) == SW_OK);
    int bad = 0;
    for (int i = 0; i < 300; i++)
        bad += O[i] != (A[i] >= 0.0f ? A[i] : 0.01f * A[i]);
    CHECK(bad == 0);
    CHECK(sw_abs(&a, &o, &err) == SW_OK);
    bad = 0;
    for (int i = 0; i < 300; i++)
        bad += O[i] != fabsf(A[i]);
    CHECK(bad == 0);
    /* log-softmax over 3 columns, checked through exp summing to one */
    CHECK(sw_log_softmax(&a, &o, &err) == SW_OK);
    for (int r = 0; r < 100; r += 17) {
        double sum = 0.0, mx = -1e30;
        for (int c = 0; c < 3; c++)
            mx = A[r * 3 + c] > mx ? A[r * 3 + c] : mx;
        for (int c = 0; c < 3; c++)
            sum += exp(A[r * 3 + c] - mx);
        for (int c = 0; c < 3; c++)
            CHECK_NEAR(O[r * 3 + c], A[r * 3 + c] - mx - log(sum), 1e-6);
    }
    /* in place */
    CHECK(sw_log_softmax(&a, &a, &err) == SW_OK);
    CHECK(max_diff(A, O, 300) == 0.0);
    int64_t s2[3] = {2, 50, 4};
    sw_tensor w = make(b, 3, s2, 0);
    CHECK(sw_leaky_relu(&a, 0.01f, &w, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor_free(&a);
    sw_tensor_free(&o);
    sw_tensor_free(&w);
}

static void test_max_pool(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t s[3] = {2, 17, 5}, so[3] = {2, 5, 5}; /* (17 - 3) / 3 + 1 = 5, the tail dropped */
    sw_tensor x = make(b, 3, s, 1), o = make(b, 3, so, 0);
    CHECK(sw_max_pool1d(&x, 3, 3, &o, &err) == SW_OK);
    const float *X = x.data, *O = o.data;
    int bad = 0;
    for (int bi = 0; bi < 2; bi++)
        for (int t = 0; t < 5; t++)
            for (int c = 0; c < 5; c++) {
                float m = -INFINITY;
                for (int k = 0; k < 3; k++)
                    m = fmaxf(m, X[(bi * 17 + t * 3 + k) * 5 + c]);
                bad += O[(bi * 5 + t) * 5 + c] != m;
            }
    CHECK(bad == 0);
    CHECK(sw_window_frames(160000, 251, 10) == 15975);
    CHECK(sw_window_frames(2, 3, 3) == 0);
    int64_t wrong[3] = {2, 6, 5};
    sw_tensor w = make(b, 3, wrong, 0);
    CHECK(sw_max_pool1d(&x, 3, 3, &w, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_max_pool1d(&x, 0, 3, &o, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor_free(&x);
    sw_tensor_free(&o);
    sw_tensor_free(&w);
}

static void test_instance_norm(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    /* 37 channels: two full blocks of 16 and a partial one */
    int64_t s[3] = {3, 101, 37}, sc[1] = {37};
    sw_tensor x = make(b, 3, s, 1), o = make(b, 3, s, 0), o2 = make(b, 3, s, 0);
    sw_tensor g = make(b, 1, sc, 1), be = make(b, 1, sc, 1);
    float *X = x.data;
    for (int64_t i = 0; i < sw_tensor_numel(&x); i++)
        X[i] = X[i] * 3.0f + 5.0f; /* an offset, as real features have */
    CHECK(sw_instance_norm(&x, &g, &be, 1e-5f, &o, &err) == SW_OK);
    CHECK(sw_instance_norm(&x, NULL, NULL, 1e-5f, &o2, &err) == SW_OK);
    const float *O = o.data, *O2 = o2.data, *G = g.data, *B = be.data;
    double worst = 0.0, worst2 = 0.0;
    for (int bi = 0; bi < 3; bi++)
        for (int c = 0; c < 37; c++) {
            double mean = 0.0, var = 0.0;
            for (int t = 0; t < 101; t++)
                mean += X[(bi * 101 + t) * 37 + c];
            mean /= 101.0;
            for (int t = 0; t < 101; t++) {
                double d = X[(bi * 101 + t) * 37 + c] - mean;
                var += d * d;
            }
            var /= 101.0;
            for (int t = 0; t < 101; t++) {
                int64_t i = (bi * 101 + t) * 37 + c;
                double n = (X[i] - mean) / sqrt(var + 1e-5);
                worst = fmax(worst, fabs(O[i] - (n * G[c] + B[c])));
                worst2 = fmax(worst2, fabs(O2[i] - n));
            }
        }
    CHECK(worst < 1e-5);
    CHECK(worst2 < 1e-5);
    /* in place gives the same bytes */
    CHECK(sw_instance_norm(&x, &g, &be, 1e-5f, &x, &err) == SW_OK);
    CHECK(max_diff(X, O, sw_tensor_numel(&x)) == 0.0);
    CHECK(sw_instance_norm(&x, &g, NULL, 1e-5f, &o, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_instance_norm(&x, &g, &be, 0.0f, &o, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor_free(&x);
    sw_tensor_free(&o);
    sw_tensor_free(&o2);
    sw_tensor_free(&g);
    sw_tensor_free(&be);
}

static double sig(double v)
{
    return 1.0 / (1.0 + exp(-v));
}

/* PyTorch's LSTM equations, one direction at a time, in double. */
static void naive_lstm(const float *x, const float *wih, const float *whh, const float *bias,
                       double *out, int B, int T, int IN, int H, int D)
{
    double *h = calloc((size_t)H, sizeof *h), *c = calloc((size_t)H, sizeof *c);
    double *g = calloc((size_t)(4 * H), sizeof *g);
    for (int d = 0; d < D; d++)
        for (int bi = 0; bi < B; bi++) {
            memset(h, 0, (size_t)H * sizeof *h);
            memset(c, 0, (size_t)H * sizeof *c);
            for (int s = 0; s < T; s++) {
                int t = d == 0 ? s : T - 1 - s;
                for (int j = 0; j < 4 * H; j++) {
                    double acc = bias[d * 4 * H + j];
                    for (int k = 0; k < IN; k++)
                        acc += (double)wih[(d * 4 * H + j) * IN + k] * x[(bi * T + t) * IN + k];
                    for (int k = 0; k < H; k++)
                        acc += (double)whh[(d * 4 * H + j) * H + k] * h[k];
                    g[j] = acc;
                }
                for (int k = 0; k < H; k++) {
                    c[k] = sig(g[H + k]) * c[k] + sig(g[k]) * tanh(g[2 * H + k]);
                    h[k] = sig(g[3 * H + k]) * tanh(c[k]);
                    out[(bi * T + t) * D * H + d * H + k] = h[k];
                }
            }
        }
    free(h);
    free(c);
    free(g);
}

static void test_lstm(sw_backend *b, int B, int T, int IN, int H, int D)
{
    sw_error err = {SW_OK, ""};
    int64_t sx[3] = {B, T, IN}, sih[3] = {D, 4 * H, IN}, shh[3] = {D, 4 * H, H};
    int64_t sb[2] = {D, 4 * H}, so[3] = {B, T, D * H};
    sw_tensor x = make(b, 3, sx, 1), wih = make(b, 3, sih, 1), whh = make(b, 3, shh, 1);
    sw_tensor bias = make(b, 2, sb, 1), out = make(b, 3, so, 0);
    CHECK(sw_lstm(&x, &wih, &whh, &bias, &out, &err) == SW_OK);
    double *want = calloc((size_t)(B * T * D * H), sizeof *want);
    naive_lstm(x.data, wih.data, whh.data, bias.data, want, B, T, IN, H, D);
    const float *O = out.data;
    double worst = 0.0;
    for (int64_t i = 0; i < (int64_t)B * T * D * H; i++)
        worst = fmax(worst, fabs(O[i] - want[i]));
    if (!(worst < 1e-4))
        fprintf(stderr, "lstm B=%d T=%d in=%d H=%d D=%d: max diff %g\n", B, T, IN, H, D, worst);
    CHECK(worst < 1e-4); /* random weights of size 1 amplify rounding */
    free(want);
    CHECK(sw_lstm(&x, &wih, &whh, &bias, &x, &err) == SW_ERR_ARG); /* wrong width or in place */
    sw_error_clear(&err);
    sw_tensor_free(&x);
    sw_tensor_free(&wih);
    sw_tensor_free(&whh);
    sw_tensor_free(&bias);
    sw_tensor_free(&out);
}

/* One sequence (B = 1, forward) run in pieces of the given lengths with the
 * state carried (sw_lstm_carry, from a zero state) gives the whole run's
 * values, and the state then holds the last step's h. Not always its bits:
 * the input projection of a piece is a product of fewer rows, which the CPU
 * may give to another kernel (few rows, sgemv, sgemm) with the sums in
 * another order. Weights as PyTorch initialises them (+-1 / sqrt(H)), so
 * that a last-bit difference does not grow along the sequence as it does
 * with weights of size 1. */
static void test_lstm_carry(sw_backend *b, int T, int IN, int H, const int *cuts, int n_cuts)
{
    sw_error err = {SW_OK, ""};
    int64_t sx[3] = {1, T, IN}, sih[3] = {1, 4 * H, IN}, shh[3] = {1, 4 * H, H};
    int64_t sb[2] = {1, 4 * H}, so[3] = {1, T, H}, ss[4] = {2, 1, 1, H};
    sw_tensor x = make(b, 3, sx, 1), wih = make(b, 3, sih, 1), whh = make(b, 3, shh, 1);
    sw_tensor bias = make(b, 2, sb, 1), whole = make(b, 3, so, 0), pieces = make(b, 3, so, 0);
    sw_tensor state = make(b, 4, ss, 0);
    sw_tensor *weights[] = {&wih, &whh, &bias};
    for (int i = 0; i < 3; i++)
        for (int64_t j = 0; j < sw_tensor_numel(weights[i]); j++)
            ((float *)weights[i]->data)[j] /= sqrtf((float)H);
    CHECK(sw_lstm(&x, &wih, &whh, &bias, &whole, &err) == SW_OK);
    int at = 0;
    for (int i = 0; i <= n_cuts; i++) {
        int len = i < n_cuts ? cuts[i] : T - at;
        sw_tensor xi = sw_tensor_slice(&x, (int64_t)at * IN, 3, 1, len, IN);
        sw_tensor oi = sw_tensor_slice(&pieces, (int64_t)at * H, 3, 1, len, H);
        CHECK(sw_lstm_carry(&xi, &wih, &whh, &bias, &state, &oi, &err) == SW_OK);
        at += len;
    }
    CHECK(at == T);
    double worst = max_diff(whole.data, pieces.data, (int64_t)T * H);
    if (!(worst < 1e-6))
        fprintf(stderr, "lstm carry T=%d in=%d H=%d: max diff %g\n", T, IN, H, worst);
    CHECK(worst < 1e-6); /* a state dropped or misplaced: ~0.1 */
    /* the state holds the last step's h (as the pieces' run computed it) */
    CHECK(memcmp(state.data, (float *)pieces.data + (int64_t)(T - 1) * H,
                 (size_t)H * sizeof(float)) == 0);
    sw_tensor wrong = make(b, 3, (int64_t[3]){2, 1, H}, 0); /* not [2, D, B, H] */
    CHECK(sw_lstm_carry(&x, &wih, &whh, &bias, &wrong, &whole, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor all[] = {x, wih, whh, bias, whole, pieces, state, wrong};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(&all[i]);
}

/* SincNet's first layer: one input channel, a long kernel, stride 10. */
static void test_strided_conv(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t T = 1000, K = 251, S = 10, C = 8, TO = (T - K) / S + 1;
    int64_t sx[3] = {2, T, 1}, sw[3] = {C, 1, K}, so[3] = {2, TO, C};
    sw_tensor x = make(b, 3, sx, 1), w = make(b, 3, sw, 1), o = make(b, 3, so, 0);
    CHECK(sw_conv1d(&x, &w, NULL, (int)S, 0, &o, &err) == SW_OK);
    const float *X = x.data, *W = w.data, *O = o.data;
    double worst = 0.0;
    for (int bi = 0; bi < 2; bi++)
        for (int64_t t = 0; t < TO; t++)
            for (int64_t c = 0; c < C; c++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)W[c * K + k] * X[bi * T + t * S + k];
                worst = fmax(worst, fabs(O[(bi * TO + t) * C + c] - acc));
            }
    CHECK(worst < 1e-4);
    sw_tensor_free(&x);
    sw_tensor_free(&w);
    sw_tensor_free(&o);
}

/* Statistics pooling against the textbook formulas in long double: weighted
 * mean, and the unbiased weighted variance sum w (x - mean)^2 / (V1 - V2/V1). */
static void test_stats_pool(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    enum { B = 2, G = 3, T = 37, C = 70, M = 2 }; /* 70 channels: a full block and part of one */
    int64_t sx[4] = {B, G, T, C}, sw3[3] = {B, M, T}, so[2] = {B * M, 2 * C * G};
    int64_t so1[2] = {B, 2 * C * G};
    sw_tensor x = make(b, 4, sx, 1), w = make(b, 3, sw3, 1), o = make(b, 2, so, 0);
    sw_tensor o1 = make(b, 2, so1, 0);
    float *X = x.data, *W = w.data;
    for (int64_t i = 0; i < sw_tensor_numel(&x); i++)
        X[i] = X[i] * 2.0f + 3.0f;
    for (int64_t i = 0; i < sw_tensor_numel(&w); i++)
        W[i] = W[i] < 0.0f ? 0.0f : W[i]; /* soft masks: some frames weigh 0 */
    CHECK(sw_stats_pool(&x, &w, 1e-7, &o, &err) == SW_OK);
    CHECK(sw_stats_pool(&x, NULL, 0.0, &o1, &err) == SW_OK);
    const float *O = o.data, *O1 = o1.data;
    double worst = 0.0;
    for (int bi = 0; bi < B; bi++)
        for (int j = 0; j <= M; j++) /* j == M: the unweighted pool */
            for (int g = 0; g < G; g++)
                for (int k = 0; k < C; k++) {
                    long double v1 = 0, v2 = 0, s = 0, q = 0;
                    for (int t = 0; t < T; t++) {
                        long double wt = j < M ? W[(bi * M + j) * T + t] : 1.0L;
                        v1 += wt;
                        v2 += wt * wt;
                        s += wt * X[((bi * G + g) * T + t) * C + k];
                    }
                    long double mean = s / v1;
                    for (int t = 0; t < T; t++) {
                        long double wt = j < M ? W[(bi * M + j) * T + t] : 1.0L;
                        long double d = X[((bi * G + g) * T + t) * C + k] - mean;
                        q += wt * d * d;
                    }
                    double sd = sqrtl(q / (v1 - v2 / v1) + (j < M ? 1e-7L : 0.0L));
                    const float *row = j < M ? O + (bi * M + j) * 2 * C * G : O1 + bi * 2 * C * G;
                    worst = fmax(worst,
                                 fabs(row[k * G + g] - (double)mean) / (1.0 + fabs((double)mean)));
                    worst = fmax(worst, fabs(row[C * G + k * G + g] - sd) / (1.0 + sd));
                }
    CHECK(worst < 1e-6);
    /* a 3-D x is one group; a pool of zero weights is NaN (0 / 0), as pyannote's */
    int64_t s3[3] = {1, 4, 2}, sw0[3] = {1, 1, 4}, so3[2] = {1, 4};
    sw_tensor x3 = make(b, 3, s3, 1), w0 = make(b, 3, sw0, 0), o3 = make(b, 2, so3, 0);
    CHECK(sw_stats_pool(&x3, &w0, 1e-7, &o3, &err) == SW_OK);
    CHECK(isnan(((float *)o3.data)[0]) && isnan(((float *)o3.data)[3]));
    /* shapes */
    CHECK(sw_stats_pool(&x, &w, 1e-7, &o1, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_stats_pool(&x3, &w, 1e-7, &o3, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_stats_pool(&x, &w, -1.0, &o, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor *all[] = {&x, &w, &o, &o1, &x3, &w0, &o3};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
}

static void test_magnitude_and_l2(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t sa[3] = {3, 5, 2 * 129}, so[3] = {3, 5, 129}, sl[2] = {7, 256};
    sw_tensor a = make(b, 3, sa, 1), o = make(b, 3, so, 0);
    CHECK(sw_magnitude(&a, &o, &err) == SW_OK);
    const float *A = a.data, *O = o.data;
    int bad = 0;
    for (int r = 0; r < 15; r++)
        for (int k = 0; k < 129; k++) {
            float re = A[r * 258 + k], im = A[r * 258 + 129 + k];
            double want = hypot(re, im);
            bad += fabs(O[r * 129 + k] - want) > 1e-6 * (1.0 + want);
        }
    CHECK(bad == 0);
    CHECK(sw_magnitude(&a, &a, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_magnitude(&o, &a, &err) == SW_ERR_ARG);
    sw_error_clear(&err);

    sw_tensor l = make(b, 2, sl, 1), lo = make(b, 2, sl, 0);
    float *L = l.data;
    for (int i = 0; i < 256; i++)
        L[6 * 256 + i] = 0.0f; /* a zero row stays zero (divided by eps) */
    CHECK(sw_l2_normalize(&l, 1e-12f, &lo, &err) == SW_OK);
    const float *LO = lo.data;
    double worst = 0.0;
    for (int r = 0; r < 7; r++) {
        double n = 0.0;
        for (int i = 0; i < 256; i++)
            n += (double)L[r * 256 + i] * L[r * 256 + i];
        n = sqrt(n);
        for (int i = 0; i < 256; i++)
            worst = fmax(worst, fabs(LO[r * 256 + i] - (r == 6 ? 0.0 : L[r * 256 + i] / n)));
    }
    CHECK(worst < 1e-7);
    CHECK(sw_l2_normalize(&l, 1e-12f, &l, &err) == SW_OK); /* in place: the same bytes */
    CHECK(max_diff(L, LO, 7 * 256) == 0.0);
    CHECK(sw_l2_normalize(&l, 0.0f, &lo, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor_free(&a);
    sw_tensor_free(&o);
    sw_tensor_free(&l);
    sw_tensor_free(&lo);
}

/* A conv1d long enough to be unfolded in blocks, each thread on its own
 * range of frames, against the whole im2col in one product per thread: the
 * same sums to float rounding (OpenBLAS may tile a block's rows otherwise
 * than the whole range's, so not always the same bits). */
static void test_blocked_conv(sw_backend *b, int threads)
{
    sw_error err = {SW_OK, ""};
    int64_t T = 6001, C_IN = 80, K = 3, C = 48, W = C_IN * K;
    int64_t sx[3] = {1, T, C_IN}, sw[3] = {C, C_IN, K}, sb[1] = {C}, so[3] = {1, T, C};
    sw_tensor x = make(b, 3, sx, 1), w = make(b, 3, sw, 1), bias = make(b, 1, sb, 1);
    sw_tensor o = make(b, 3, so, 0);
    CHECK(sw_conv1d(&x, &w, &bias, 1, 1, &o, &err) == SW_OK);
    /* the whole im2col (column ci * K + kk as w's layout), then each
     * thread's rows in one product on top of the bias */
    float *cols = calloc((size_t)(T * W), sizeof *cols), *want = malloc((size_t)(T * C) * 4);
    const float *X = x.data, *B = bias.data;
    for (int64_t t = 0; t < T; t++)
        for (int64_t kk = 0; kk < K; kk++)
            for (int64_t ci = 0; ci < C_IN; ci++) {
                int64_t ti = t + kk - 1;
                cols[t * W + ci * K + kk] = ti < 0 || ti >= T ? 0.0f : X[ti * C_IN + ci];
            }
    for (int64_t t = 0; t < T; t++)
        memcpy(want + t * C, B, (size_t)C * sizeof *B);
    for (int p = 0; p < threads; p++) {
        int64_t r0 = T * p / threads, r1 = T * (p + 1) / threads;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(r1 - r0), (int)C, (int)W, 1.0f,
                    cols + r0 * W, (int)W, w.data, (int)W, 1.0f, want + r0 * C, (int)C);
    }
    CHECK(max_diff(o.data, want, T * C) < 1e-4);
    free(cols);
    free(want);
    sw_tensor_free(&x);
    sw_tensor_free(&w);
    sw_tensor_free(&bias);
    sw_tensor_free(&o);
}

/* sw_cpu_gather_linear against a naive gather, product, bias and ReLU: taps
 * with ids out of range (zeros), blocks that do not divide the rows, and the
 * plain product (no ids). Every slot's scratch must be back in the pool. */
static void test_gather_linear(sw_backend *b, int64_t n_out, int taps, int64_t c_in, int64_t c_out,
                               int use_ids, int relu, int64_t block, int transposed)
{
    sw_error err = {SW_OK, ""};
    int64_t rows = 97, width = taps * c_in;
    int64_t sx[2] = {use_ids ? rows : n_out, c_in}, sw[2] = {c_out, width}, sb[1] = {c_out};
    int64_t so[2] = {n_out, c_out}, si[1] = {n_out * taps};
    sw_tensor x = make(b, 2, sx, 1), w = make(b, 2, sw, 1), bias = make(b, 1, sb, 1);
    sw_tensor o = make(b, 2, so, 0), ids = {0};
    CHECK(sw_tensor_new(b, SW_I32, 1, si, &ids, &err) == SW_OK);
    int32_t *id = ids.data;
    for (int64_t i = 0; i < n_out * taps; i++)
        id[i] = (int32_t)(rand() % (rows + 6)) - 3; /* some below 0, some past the end */
    sw_tensor wt = {0};                             /* the narrow kernel's layout, [width, c_out] */
    if (transposed) {
        int64_t st[2] = {width, c_out};
        wt = make(b, 2, st, 0);
        for (int64_t c = 0; c < c_out; c++)
            for (int64_t k = 0; k < width; k++)
                ((float *)wt.data)[k * c_out + c] = ((const float *)w.data)[c * width + k];
    }
    CHECK(sw_cpu_gather_linear(&x, use_ids ? &ids : NULL, use_ids ? taps : 1, transposed ? &wt : &w,
                               transposed, &bias, relu, block, &o, &err) == SW_OK);
    const float *X = x.data, *W = w.data, *B = bias.data, *O = o.data;
    double worst = 0.0;
    for (int64_t r = 0; r < n_out; r++)
        for (int64_t c = 0; c < c_out; c++) {
            double sum = B[c];
            for (int t = 0; t < (use_ids ? taps : 1); t++) {
                int64_t src = use_ids ? id[r * taps + t] : r;
                if (src < 0 || src >= sx[0])
                    continue;
                for (int64_t k = 0; k < c_in; k++)
                    sum += (double)X[src * c_in + k] * W[c * width + t * c_in + k];
            }
            if (relu && sum < 0.0)
                sum = 0.0;
            double d = fabs(sum - O[r * c_out + c]);
            worst = d > worst || d != d ? d : worst;
        }
    if (worst >= 1e-4)
        fprintf(stderr, "gather_linear n=%lld taps=%d: max diff %g\n", (long long)n_out, taps,
                worst);
    CHECK(worst < 1e-4);
    sw_tensor_free(&x);
    sw_tensor_free(&w);
    sw_tensor_free(&bias);
    sw_tensor_free(&o);
    sw_tensor_free(&ids);
    sw_tensor_free(&wt);
}

/* sw_cpu_affine_relu_rows: the first c of every ld floats, scaled, shifted
 * and cut at zero, bit for bit as the three ops would (separate roundings) */
static void test_affine_relu(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    int64_t n = 37, ld = 96, c = 70, ss[2] = {n, ld}, sc[1] = {c}, so[2] = {n, c};
    sw_tensor src = make(b, 2, ss, 1), scale = make(b, 1, sc, 1), shift = make(b, 1, sc, 1);
    sw_tensor out = make(b, 2, so, 0);
    CHECK(sw_cpu_affine_relu_rows(b, src.data, ld, n, c, scale.data, shift.data, out.data, &err) ==
          SW_OK);
    const float *S = src.data, *A = scale.data, *B = shift.data, *O = out.data;
    int bad = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t k = 0; k < c; k++) {
            volatile float v = S[r * ld + k] * A[k];
            v = v + B[k];
            bad += O[r * c + k] != (v < 0.0f ? 0.0f : v);
        }
    CHECK(bad == 0);
    sw_tensor_free(&src);
    sw_tensor_free(&scale);
    sw_tensor_free(&shift);
    sw_tensor_free(&out);
}

/* sw_cpu_winograd3x3 (or, strided, sw_cpu_winograd3x3_rows2) against a
 * direct 3x3 convolution in double: images of odd and even sizes (tiles cut
 * by the edges), one a single column wide, with bias, residual and ReLU; at
 * `level` (the transforms have a build per level,
 * the products the narrow kernel when c_out allows, else sgemm) */
static void test_winograd(sw_backend *b, int64_t c_in, int64_t c_out, int with_add, int relu,
                          int strided)
{
    sw_error err = {SW_OK, ""};
    const int batch = 3;
    const int64_t h = 7, off[4] = {0, 5, 6, 14}, n = h * off[batch];
    const int64_t h_out = strided ? (h - 1) / 2 + 1 : h, n_out = h_out * off[batch];
    int64_t sx[2] = {n, c_in}, sy[2] = {n_out, c_out}, sw[2] = {9 * c_in, c_out}, sb[1] = {c_out};
    int64_t su[2] = {strided ? SW_WINOGRAD_STRIDED_ROWS * c_in : SW_WINOGRAD_POINTS * c_in, c_out};
    sw_tensor x = make(b, 2, sx, 1), w = make(b, 2, sw, 1), bias = make(b, 1, sb, 1);
    sw_tensor add = make(b, 2, sy, 1), y = make(b, 2, sy, 0), u = make(b, 2, su, 0);
    if (strided) {
        sw_winograd_columns_weights(w.data, c_in, c_out, u.data);
        CHECK(sw_cpu_winograd3x3_rows2(&x, h, batch, off, &u, &bias, with_add ? &add : NULL, relu,
                                       &y, &err) == SW_OK);
    } else {
        sw_winograd_weights(w.data, c_in, c_out, u.data);
        CHECK(sw_cpu_winograd3x3(&x, h, batch, off, &u, &bias, with_add ? &add : NULL, relu, &y,
                                 &err) == SW_OK);
    }
    const float *X = x.data, *W = w.data, *B = bias.data, *A = add.data, *Y = y.data;
    double worst = 0.0;
    for (int im = 0; im < batch; im++) {
        int64_t wd = off[im + 1] - off[im], base = h * off[im], base_out = h_out * off[im];
        for (int64_t r = 0; r < h_out; r++)
            for (int64_t c = 0; c < wd; c++)
                for (int64_t o = 0; o < c_out; o++) {
                    int64_t at = (base_out + r * wd + c) * c_out + o;
                    double sum = B[o] + (with_add ? A[at] : 0.0);
                    for (int dr = 0; dr < 3; dr++)
                        for (int dc = 0; dc < 3; dc++) {
                            int64_t rr = (strided ? 2 : 1) * r + dr - 1, cc = c + dc - 1;
                            if (rr < 0 || rr >= h || cc < 0 || cc >= wd)
                                continue;
                            for (int64_t i = 0; i < c_in; i++)
                                sum += (double)X[(base + rr * wd + cc) * c_in + i] *
                                       W[((dr * 3 + dc) * c_in + i) * c_out + o];
                        }
                    if (relu && sum < 0.0)
                        sum = 0.0;
                    double d = fabs(sum - Y[at]);
                    worst = d > worst || d != d ? d : worst;
                }
    }
    if (worst >= 1e-4)
        fprintf(stderr, "winograd c_in=%lld c_out=%lld strided=%d: max diff %g\n", (long long)c_in,
                (long long)c_out, strided, worst);
    CHECK(worst < 1e-4);
    /* shapes that do not agree are refused, not read past */
    sw_error bad = {SW_OK, ""};
    CHECK((strided ? sw_cpu_winograd3x3_rows2 : sw_cpu_winograd3x3)(
              &x, h + 1, batch, off, &u, &bias, NULL, relu, &y, &bad) == SW_ERR_ARG);
    sw_tensor_free(&x);
    sw_tensor_free(&w);
    sw_tensor_free(&bias);
    sw_tensor_free(&add);
    sw_tensor_free(&y);
    sw_tensor_free(&u);
}

/* sw_cpu_conv3x3_single against a direct convolution in double: three
 * single-channel images (one a column wide), bias, ReLU, at `relu` */
static void test_conv_single(sw_backend *b, int relu)
{
    sw_error err = {SW_OK, ""};
    const int batch = 3;
    const int64_t h = 6, c = 24, off[4] = {0, 4, 5, 12}, n = h * off[batch];
    int64_t sx[2] = {n, 1}, sy[2] = {n, c}, sw[2] = {9, c}, sb[1] = {c};
    sw_tensor x = make(b, 2, sx, 1), y = make(b, 2, sy, 0), w = make(b, 2, sw, 1);
    sw_tensor bias = make(b, 1, sb, 1);
    CHECK(sw_cpu_conv3x3_single(&x, h, batch, off, w.data, bias.data, relu, &y, &err) == SW_OK);
    const float *X = x.data, *W = w.data, *B = bias.data, *Y = y.data;
    double worst = 0.0;
    for (int im = 0; im < batch; im++) {
        int64_t wd = off[im + 1] - off[im], base = h * off[im];
        for (int64_t r = 0; r < h; r++)
            for (int64_t col = 0; col < wd; col++)
                for (int64_t o = 0; o < c; o++) {
                    double sum = B[o];
                    for (int dr = 0; dr < 3; dr++)
                        for (int dc = 0; dc < 3; dc++) {
                            int64_t rr = r + dr - 1, cc = col + dc - 1;
                            if (rr >= 0 && rr < h && cc >= 0 && cc < wd)
                                sum += (double)X[base + rr * wd + cc] * W[(dr * 3 + dc) * c + o];
                        }
                    if (relu && sum < 0.0)
                        sum = 0.0;
                    double d = fabs(sum - Y[(base + r * wd + col) * c + o]);
                    worst = d > worst || d != d ? d : worst;
                }
    }
    CHECK(worst < 1e-5);
    sw_error bad = {SW_OK, ""};
    CHECK(sw_cpu_conv3x3_single(&x, h + 1, batch, off, w.data, NULL, relu, &y, &bad) == SW_ERR_ARG);
    sw_tensor_free(&x);
    sw_tensor_free(&y);
    sw_tensor_free(&w);
    sw_tensor_free(&bias);
}

/* sw_cpu_span_abs_pool against the ops it fuses (scale, add, abs, max pool),
 * bit for bit, with a NaN in one window; windows that leave the span refused */
static void test_span_pool(sw_backend *b)
{
    sw_error err = {SW_OK, ""};
    const int batch = 3, pool = 3;
    const int64_t rows = 101, c = 13, t_out = 20, first[3] = {0, 7, 41};
    int64_t ss[2] = {rows, c}, sy[3] = {batch, t_out, c}, sw[3] = {1, t_out * pool, c};
    int64_t sh[1] = {c}, sp[3] = {1, t_out, c};
    sw_tensor span = make(b, 2, ss, 1), y = make(b, 3, sy, 0);
    ((float *)span.data)[50 * c + 4] = NAN;
    float scale[3] = {0.7f, -1.3f, 2.1f}, shift[3 * 13];
    for (int i = 0; i < batch * c; i++)
        shift[i] = frand();
    CHECK(sw_cpu_span_abs_pool(&span, first, scale, shift, pool, &y, &err) == SW_OK);
    int same = 1;
    for (int i = 0; i < batch; i++) {
        sw_tensor win = make(b, 3, sw, 0), pooled = make(b, 3, sp, 0), sh_t = make(b, 1, sh, 0);
        memcpy(sh_t.data, shift + i * c, (size_t)c * sizeof(float));
        sw_tensor src = sw_tensor_slice(&span, first[i] * c, 3, 1, t_out * pool, c);
        CHECK(sw_scale(&src, scale[i], &win, &err) == SW_OK &&
              sw_add(&win, &sh_t, &win, &err) == SW_OK && sw_abs(&win, &win, &err) == SW_OK &&
              sw_max_pool1d(&win, pool, pool, &pooled, &err) == SW_OK);
        same &= memcmp(pooled.data, (float *)y.data + (int64_t)i * t_out * c,
                       (size_t)(t_out * c) * sizeof(float)) == 0;
        sw_tensor_free(&win);
        sw_tensor_free(&pooled);
        sw_tensor_free(&sh_t);
    }
    CHECK(same);
    const int64_t past[3] = {0, 7, 42}; /* 42 + 60 rows > 101 */
    sw_error bad = {SW_OK, ""};
    CHECK(sw_cpu_span_abs_pool(&span, past, scale, shift, pool, &y, &bad) == SW_ERR_ARG);
    sw_tensor_free(&span);
    sw_tensor_free(&y);
}

static void run_all(int threads)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(threads, &b, &err) == SW_OK);
    if (!b)
        return;
    srand(7);
    test_elementwise(b);
    test_max_pool(b);
    test_instance_norm(b);
    test_lstm(b, 3, 9, 5, 4, 2);
    test_lstm(b, 1, 13, 7, 8, 1);
    test_lstm(b, 37, 5, 6, 3, 2); /* more rows than one few-rows group */
    test_lstm(b, 2, 20, 60, 128, 2);
    test_lstm_carry(b, 50, 7, 8, (const int[]){1, 13, 2}, 3);
    test_lstm_carry(b, 300, 128, 128, (const int[]){99, 1, 100}, 3); /* Silero's sizes */
    test_strided_conv(b);
    test_blocked_conv(b, threads);
    test_stats_pool(b);
    test_magnitude_and_l2(b);
    if (b->kind == SW_DEVICE_CPU) { /* a CPU kernel, not an op of the table */
        test_gather_linear(b, 301, 3, 20, 32, 1, 1, 64, 0);   /* CAM++'s local conv, small */
        test_gather_linear(b, 45, 9, 8, 16, 1, 0, 256, 0);    /* fewer rows than a block */
        test_gather_linear(b, 130, 1, 40, 24, 0, 1, 1000, 0); /* a plain product */
        test_affine_relu(b);
        test_span_pool(b);
        /* the narrow kernel (32 + 16 columns; 8 + 5 rows) at every level this CPU has */
        for (int lv = SW_CPU_V3; lv <= (int)sw_cpu_level_hardware(); lv++) {
            sw_cpu_level_force(lv);
            if (!sw_cpu_gather_linear_wants_transposed(48)) { /* sanitizer builds: no intrinsics */
                printf("this build has no narrow kernel: it was not run\n");
                break;
            }
            test_gather_linear(b, 301, 3, 20, 48, 1, 1, 64, 1);
            test_gather_linear(b, 13, 1, 40, 32, 0, 0, 1000, 1);
        }
        /* Winograd's transforms at every level (baseline too), its products
         * by the narrow kernel (32 outputs) and by sgemm (24) */
        for (int lv = SW_CPU_BASELINE; lv <= (int)sw_cpu_level_hardware();
             lv = lv == SW_CPU_BASELINE ? SW_CPU_V3 : lv + 1) {
            sw_cpu_level_force(lv);
            test_conv_single(b, lv % 2);
            for (int strided = 0; strided < 2; strided++) {
                test_winograd(b, 32, 32, 1, 1, strided);
                test_winograd(b, 16, 24, 0, 1, strided);
                test_winograd(b, 8, 32, 1, 0, strided);
            }
        }
        sw_cpu_level_force(-1);
        if (sw_cpu_level_hardware() < SW_CPU_V3)
            printf("this CPU has no AVX2: the narrow kernel was not run\n");
    }
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
}

int main(void)
{
    run_all(1);
    run_all(4);
    return sw_check_summary("test_diar_ops");
}
