/* The kernels that have several instruction-set builds (cpu_dispatch.h), run
 * at every level this CPU allows, against each other:
 *   - log-softmax, the decoder's few-rows attention, the encoder's softmax,
 *     the int8 product and GELU give the same bits at every level (no contraction, or exact
 *     integer sums);
 *   - the few-rows product and the LSTM fuse multiply-adds at x86-64-v3 and
 *     v4, the same bits at both, and the baseline may differ in the last bits.
 * A CPU without AVX-512 compares what it can and says which levels it ran;
 * CI runs the C tests on whatever CPU it has. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "check.h"
#include "cpu_dispatch.h"
#include "ops.h"
#include "q8_gemm.h"
#include "small_gemm.h"
#include "whisper_logits.h"

#define VOCAB   5003
#define BEAMS   5
#define D       384
#define N_OUT   301
#define FRAMES  1500
#define HEADS   6
#define LSTM_B  13 /* the AVX-512 recurrence's blocks of 8, 4 and 1 rows */
#define LSTM_T  17
#define LSTM_IN 60
#define LSTM_H  128
#define ENC_T   40   /* query rows: the encoder's path (sgemm, then the softmax) */
#define GELU_N  4099 /* past 4096: whole vectors and a remainder at every width */

typedef struct results {
    float softmax[2 * VOCAB];
    float gemm[BEAMS * N_OUT];
    float q8[BEAMS * N_OUT];
    float attn[BEAMS * D];
    float lstm[LSTM_B * LSTM_T * 2 * LSTM_H];
    float gelu[GELU_N];
    float enc_attn[ENC_T * D];
} results;

static float frand(void)
{
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

static void fill(float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = frand() * scale;
}

static sw_tensor tensor(sw_backend *b, int ndim, const int64_t *shape, float scale)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t;
    CHECK(sw_tensor_new(b, SW_F32, ndim, shape, &t, &err) == SW_OK);
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    fill(t.data, (size_t)n, scale);
    return t;
}

/* Every kernel once at the current level, on inputs made from one seed. */
static void run_all(sw_backend *b, results *r)
{
    sw_error err = {SW_OK, ""};
    srand(7);
    float *logits = malloc(sizeof r->softmax);
    fill(logits, 2 * VOCAB, 8.0f);
    sw_log_softmax_rows(logits, 2, VOCAB, r->softmax);
    free(logits);

    float *a = malloc(sizeof(float) * BEAMS * D), *w = malloc(sizeof(float) * N_OUT * D);
    fill(a, BEAMS * D, 1.0f);
    fill(w, (size_t)N_OUT * D, 0.1f);
    memset(r->gemm, 0, sizeof r->gemm);
    sw_small_gemm_nt(BEAMS, 0, N_OUT, D, 1.0f, a, D, w, D, 0.0f, r->gemm, N_OUT);

    int8_t *qa = malloc(BEAMS * D), *qw = malloc((size_t)N_OUT * D);
    float sa[BEAMS], sw[N_OUT];
    int32_t sums[N_OUT];
    sw_q8_quantize_rows(a, BEAMS, D, D, qa, sa);
    sw_q8_quantize_rows(w, N_OUT, D, D, qw, sw);
    sw_q8_row_sums(qw, N_OUT, D, sums);
    sw_q8_gemm_nt(BEAMS, 0, N_OUT, D, qa, sa, qw, sw, sums, 0.0f, r->q8, N_OUT);
    free(qa);
    free(qw);
    free(a);
    free(w);

    /* the decoder's cross-attention: five beams over one audio's keys */
    int64_t qs[3] = {BEAMS, 1, D}, ks[3] = {1, FRAMES, D};
    sw_tensor q = tensor(b, 3, qs, 1.0f), k = tensor(b, 3, ks, 1.0f), v = tensor(b, 3, ks, 1.0f);
    sw_tensor out = tensor(b, 3, qs, 0.0f);
    sw_attention_params p = {HEADS, FRAMES, -1, 0.125f, NULL};
    CHECK(sw_attention(&q, &k, &v, &p, &out, NULL, &err) == SW_OK);
    memcpy(r->attn, out.data, sizeof r->attn);
    sw_tensor_free(&q);
    sw_tensor_free(&k);
    sw_tensor_free(&v);
    sw_tensor_free(&out);

    int64_t xs[3] = {LSTM_B, LSTM_T, LSTM_IN}, ih[3] = {2, 4 * LSTM_H, LSTM_IN},
            hh[3] = {2, 4 * LSTM_H, LSTM_H}, bs[2] = {2, 4 * LSTM_H},
            os[3] = {LSTM_B, LSTM_T, 2 * LSTM_H};
    sw_tensor x = tensor(b, 3, xs, 1.0f), wih = tensor(b, 3, ih, 0.2f),
              whh = tensor(b, 3, hh, 0.2f);
    sw_tensor bias = tensor(b, 2, bs, 0.1f), lo = tensor(b, 3, os, 0.0f);
    CHECK(sw_lstm(&x, &wih, &whh, &bias, &lo, &err) == SW_OK);
    memcpy(r->lstm, lo.data, sizeof r->lstm);
    sw_tensor_free(&x);
    sw_tensor_free(&wih);
    sw_tensor_free(&whh);
    sw_tensor_free(&bias);
    sw_tensor_free(&lo);

    /* the encoder's self-attention: many queries, a head at a time */
    int64_t es[3] = {1, ENC_T, D};
    sw_tensor eq = tensor(b, 3, es, 1.0f), ek = tensor(b, 3, es, 1.0f), ev = tensor(b, 3, es, 1.0f);
    sw_tensor eo = tensor(b, 3, es, 0.0f);
    sw_attention_params ep = {HEADS, ENC_T, -1, 0.125f, NULL};
    CHECK(sw_attention(&eq, &ek, &ev, &ep, &eo, NULL, &err) == SW_OK);
    memcpy(r->enc_attn, eo.data, sizeof r->enc_attn);
    sw_tensor_free(&eq);
    sw_tensor_free(&ek);
    sw_tensor_free(&ev);
    sw_tensor_free(&eo);

    /* -6 .. 6: both of erf's ranges, the clamp at |x / sqrt 2| = 4 */
    int64_t gs[1] = {GELU_N};
    sw_tensor g = tensor(b, 1, gs, 6.0f), go = tensor(b, 1, gs, 0.0f);
    CHECK(sw_gelu(&g, &go, &err) == SW_OK);
    memcpy(r->gelu, go.data, sizeof r->gelu);
    sw_tensor_free(&g);
    sw_tensor_free(&go);
}

/* the largest difference over the largest magnitude: sums that cancel make
 * small outputs whose own relative error says nothing about the kernel */
static double worst_rel(const float *x, const float *y, size_t n)
{
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - y[i]);
        worst = d > worst ? d : worst;
        top = fabs((double)y[i]) > top ? fabs((double)y[i]) : top;
    }
    return worst / top;
}

#define SAME(field, x, y) (memcmp((x)->field, (y)->field, sizeof(x)->field) == 0)

/* SAYWHO_CPU_DISPATCH's one parser, which Python reads too (saywho._dispatch):
 * exact spellings, no case folding, no spaces */
static void dispatch_spellings(void)
{
    int tiles = -1;
    CHECK(sw_cpu_dispatch_parse(NULL, &tiles) == SW_CPU_V4 && tiles == 1);
    CHECK(sw_cpu_dispatch_parse("", &tiles) == SW_CPU_V4 && tiles == 1);
    CHECK(sw_cpu_dispatch_parse("amx", &tiles) == SW_CPU_V4 && tiles == 1);
    CHECK(sw_cpu_dispatch_parse("avx512", &tiles) == SW_CPU_V4 && tiles == 0);
    CHECK(sw_cpu_dispatch_parse("x86-64-v3", &tiles) == SW_CPU_V3 && tiles == 0);
    CHECK(sw_cpu_dispatch_parse("baseline", NULL) == SW_CPU_BASELINE);
    CHECK(sw_cpu_dispatch_parse("AVX2", &tiles) == -1 && tiles == 0);
    CHECK(sw_cpu_dispatch_parse(" avx2", NULL) == -1);
    sw_error err = {SW_OK, ""};
    CHECK(sw_cpu_dispatch_check_value("avx2", &err) == SW_OK);
    sw_error_clear(&err);
    CHECK(sw_cpu_dispatch_check_value("Auto", &err) == SW_ERR_ARG);
    CHECK(strstr(err.msg, "SAYWHO_CPU_DISPATCH=Auto is not a dispatch level") != NULL);
}

int main(void)
{
    dispatch_spellings();
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_cpu_backend_open(2, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_cpu_dispatch");
    sw_cpu_level hw = sw_cpu_level_hardware();
    static results at[5];
    int levels[3] = {SW_CPU_BASELINE, SW_CPU_V3, SW_CPU_V4};
    for (int i = 0; i < 3 && levels[i] <= (int)hw; i++) {
        sw_cpu_level_force(levels[i]);
        CHECK(sw_cpu_level_get() == (sw_cpu_level)levels[i]);
        run_all(b, &at[levels[i]]);
        printf("ran every kernel at %s\n", sw_cpu_level_name((sw_cpu_level)levels[i]));
    }
    /* forcing above the hardware's level is clamped, never an illegal instruction */
    sw_cpu_level_force(SW_CPU_V4);
    CHECK(sw_cpu_level_get() == hw);
    sw_cpu_level_force(-1);

    const results *base = &at[SW_CPU_BASELINE];
    for (int lv = SW_CPU_V3; lv <= (int)hw; lv++) {
        if (lv != SW_CPU_V3 && lv != SW_CPU_V4)
            continue;
        const results *r = &at[lv];
        CHECK(SAME(softmax, r, base));
        CHECK(SAME(q8, r, base));
        CHECK(SAME(attn, r, base));
        CHECK(SAME(gelu, r, base));
        CHECK(SAME(enc_attn, r, base));
        /* fused multiply-adds against separate ones: a few ulps apart */
        CHECK_NEAR(worst_rel(r->gemm, base->gemm, BEAMS * N_OUT), 0.0, 1e-5);
        CHECK_NEAR(worst_rel(r->lstm, base->lstm, sizeof r->lstm / sizeof(float)), 0.0, 1e-5);
    }
    if (hw == SW_CPU_V4) {
        CHECK(SAME(gemm, &at[SW_CPU_V4], &at[SW_CPU_V3]));
        CHECK(SAME(lstm, &at[SW_CPU_V4], &at[SW_CPU_V3]));
    } else {
        printf("this CPU is %s: the x86-64-v4 builds were not compared\n", sw_cpu_level_name(hw));
    }
    b->destroy(b);
    return sw_check_summary("test_cpu_dispatch");
}
