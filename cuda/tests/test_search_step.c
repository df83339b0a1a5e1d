/* search_step alone (cuda/search_step.cu, search_draw.h), on hand-made
 * logits against a plain C reference written here from whisper_logits.c's
 * and whisper_sampling.c's arithmetic: the mask bits and ranges, the
 * timestamp check, log-softmax plus the cumulative score, the k best (ties
 * to the lower id), the no-speech probability, and a draw at a temperature
 * from given uniforms. It dlopens the backend the way the core does:
 *   test_search_step path/to/libsaywho_cuda[_emu].so
 * ctest runs it on the emulator (search_step_emulated); on a machine whose
 * library finds no GPU it reports "skipped" (77). */
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "elementwise_math.h"

#define ROWS 4
#define N    300 /* tokens; timestamps from TSB */
#define TSB  200
#define NS   7 /* the no-speech token */

static sw_backend *be;
static int failures;

static void fail_if(int bad, const char *what, int row, int i)
{
    if (bad) {
        fprintf(stderr, "FAIL %s (row %d, entry %d)\n", what, row, i);
        failures++;
    }
}

static void ok_or_die(sw_status st, const sw_error *err, const char *what)
{
    if (st != SW_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, sw_status_name(st), err->msg);
        exit(1);
    }
}

/* ---- the reference: the CPU's arithmetic, one row at a time ---- */

static float max_of(const float *x, int from, int to)
{
    float m = -INFINITY;
    for (int j = from; j < to; j++)
        m = x[j] > m ? x[j] : m;
    return m;
}

/* whisper_logits.c's sw_log_softmax_rows constant */
static float log_softmax_shift(const float *y)
{
    float mx = max_of(y, 0, N);
    double s = 0.0;
    for (int j = 0; j < N; j++)
        s += (double)sw_expf_nonpositive(y[j] - mx);
    return -mx - logf((float)s);
}

/* The rules: mask bits, ranges, then the timestamp check; y gets the row. */
static void ref_rules(const float *x, const int8_t *mask, const sw_search_row *r, float *y)
{
    for (int j = 0; j < N; j++) {
        int off = (mask[j] & r->mask_bits) != 0;
        for (int q = 0; q < 3; q++)
            off |= j >= r->from[q] && j < r->to[q];
        y[j] = off ? -FLT_MAX : x[j];
    }
    if (!r->check)
        return;
    float c = log_softmax_shift(y), ls[N];
    for (int j = 0; j < N; j++)
        ls[j] = y[j] + c;
    float max_text = max_of(ls, 0, TSB), mx = max_of(ls, TSB, N);
    double s = 0.0;
    for (int j = TSB; j < N; j++)
        s += exp((double)(ls[j] - mx));
    if ((float)log((double)(float)s) + mx > max_text)
        for (int j = 0; j < TSB; j++)
            y[j] = -FLT_MAX;
}

/* The row's scores as search_step defines them. */
static void ref_scores(const float *y, int log_softmax, float cum, float *v)
{
    float c = log_softmax ? log_softmax_shift(y) : 0.0f;
    for (int j = 0; j < N; j++)
        v[j] = log_softmax ? (y[j] + c) + cum : y[j];
}

/* The k best by plain selection: the larger score, then the lower id. */
static void ref_best(const float *v, int k, int32_t *ids)
{
    char taken[N] = {0};
    for (int i = 0; i < k; i++) {
        int b = -1;
        for (int j = 0; j < N; j++)
            if (!taken[j] && (b < 0 || v[j] > v[b]))
                b = j;
        taken[b] = 1;
        ids[i] = b;
    }
}

/* whisper_sampling.c's draw over the whole vocabulary */
static int32_t ref_draw(const float *v, float temperature, uint64_t m)
{
    float inv = 1.0f / temperature, p[N];
    for (int j = 0; j < N; j++)
        p[j] = temperature != 1.0f ? v[j] * inv : v[j];
    float mx = max_of(p, 0, N);
    double sum = 0.0;
    for (int j = 0; j < N; j++) {
        p[j] = expf(p[j] - mx);
        sum += (double)p[j];
    }
    float inv_sum = 1.0f / (float)sum;
    double cdf[N], total = 0.0;
    for (int j = 0; j < N; j++)
        cdf[j] = total += floor((double)(p[j] * inv_sum) * SW_DRAW_UNITS);
    double u = ((double)m * 0x1p-53) * total;
    for (int j = 0; j < N; j++)
        if (cdf[j] > u)
            return j;
    return N - 1;
}

static float ref_no_speech(const float *x)
{
    float mx = max_of(x, 0, N);
    double s = 0.0;
    for (int j = 0; j < N; j++)
        s += (double)expf(x[j] - mx);
    return expf(x[NS] - mx) * (1.0f / (float)s);
}

/* ---- the device ---- */

static sw_tensor logits_d, mask_d, plan_d, work_d;

/* A device tensor of the backend's own memory. */
static sw_tensor device_tensor(sw_dtype dt, size_t elem, int ndim, const int64_t *shape)
{
    sw_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)(t.shape[i] = shape[i]);
    sw_error err = {SW_OK, {0}};
    t.data = be->alloc(be, n * elem, &err);
    t.backend = be;
    if (!t.data)
        ok_or_die(err.code, &err, "alloc");
    return t;
}

static void run(const sw_search_row *rows, const sw_search_params *p, int32_t *ids, float *scores,
                float *no_speech)
{
    sw_error err = {SW_OK, {0}};
    ok_or_die(be->upload(be, plan_d.data, rows, ROWS * sizeof *rows, &err), &err, "upload plan");
    ok_or_die(be->search_step(be, &logits_d, &mask_d, &plan_d, &work_d, p, &err), &err,
              "search_step");
    float found[SW_SEARCH_FOUND(ROWS, SW_SEARCH_MAX_K)];
    ok_or_die(be->download(be, found, (float *)work_d.data + SW_SEARCH_FOUND_AT(ROWS, N),
                           (size_t)SW_SEARCH_FOUND(ROWS, p->k) * sizeof(float), &err),
              &err, "download");
    memcpy(ids, found, (size_t)(ROWS * p->k) * sizeof *ids);
    memcpy(scores, found + ROWS * p->k, (size_t)(ROWS * p->k) * sizeof *scores);
    memcpy(no_speech, found + 2 * ROWS * p->k, ROWS * sizeof *no_speech);
}

/* Hand-made rows: each its own rules, so every rule is met with and without
 * the others. */
static void make_rows(sw_search_row *rows)
{
    memset(rows, 0, ROWS * sizeof *rows);
    for (int r = 0; r < ROWS; r++) {
        rows[r].mask_bits = 1;
        rows[r].no_speech = -1;
    }
    /* row 1: the first step's mask too, two ranges, its no-speech */
    rows[1].mask_bits = 3;
    rows[1].from[0] = 10, rows[1].to[0] = 20;
    rows[1].from[1] = 250, rows[1].to[1] = N;
    rows[1].no_speech = NS;
    rows[1].cum = -1.5f;
    /* row 2: the check, where the timestamps outweigh every text token */
    rows[2].check = 1;
    rows[2].cum = -0.25f;
    rows[2].no_speech = NS;
    /* row 3: the check where they do not, and an empty range (to <= from) */
    rows[3].check = 1;
    rows[3].from[2] = 40, rows[3].to[2] = 30;
}

static void check_search(const float *x, const int8_t *mask, const sw_search_row *rows, int k,
                         int log_softmax)
{
    sw_search_params p = {k, log_softmax, TSB, 0.0f};
    int32_t ids[ROWS * SW_SEARCH_MAX_K], want[SW_SEARCH_MAX_K];
    float scores[ROWS * SW_SEARCH_MAX_K], no_speech[ROWS], y[N], v[N];
    run(rows, &p, ids, scores, no_speech);
    for (int r = 0; r < ROWS; r++) {
        ref_rules(x + r * N, mask, &rows[r], y);
        /* the rows meet what they were made for: row 2's check disables
         * the text, row 3's does not */
        fail_if((r == 2) != (y[0] == -FLT_MAX && y[TSB - 1] == -FLT_MAX), "the check", r, 0);
        ref_scores(y, log_softmax, rows[r].cum, v);
        ref_best(v, k, want);
        for (int i = 0; i < k; i++) {
            fail_if(ids[r * k + i] != want[i], "best id", r, i);
            fail_if(fabsf(scores[r * k + i] - v[want[i]]) > 1e-6f * (1.0f + fabsf(v[want[i]])),
                    "best score", r, i);
        }
        if (rows[r].no_speech >= 0) {
            float ns = ref_no_speech(x + r * N);
            fail_if(fabsf(no_speech[r] - ns) > 1e-6f * ns, "no-speech probability", r, 0);
        }
    }
    printf("k %2d, %s: checked\n", k, log_softmax ? "log-probabilities" : "masked logits");
}

static void check_draws(const float *x, const int8_t *mask, sw_search_row *rows, float temperature,
                        int log_softmax)
{
    /* the extremes of [0, 1) and a spread between */
    uint64_t draws[] = {0,
                        (1ull << 53) - 1,
                        1ull << 52,
                        12345678901234ull,
                        0x1234567890abcull,
                        0x1fedcba9876543ull,
                        0x0800000000000ull,
                        0x17000000000000ull};
    int n_draws = (int)(sizeof draws / sizeof *draws);
    sw_search_params p = {1, log_softmax, TSB, temperature};
    float y[N], v[N];
    int distinct = 0, last = -1;
    for (int d = 0; d < n_draws; d++) {
        int32_t ids[ROWS];
        float scores[ROWS], no_speech[ROWS];
        for (int r = 0; r < ROWS; r++) {
            uint64_t m = (draws[d] + (uint64_t)r * 0x9e3779b97f4aull) & ((1ull << 53) - 1);
            rows[r].uniform[0] = (uint32_t)m;
            rows[r].uniform[1] = (uint32_t)(m >> 32);
        }
        run(rows, &p, ids, scores, no_speech);
        for (int r = 0; r < ROWS; r++) {
            uint64_t m = (uint64_t)rows[r].uniform[0] | ((uint64_t)rows[r].uniform[1] << 32);
            ref_rules(x + r * N, mask, &rows[r], y);
            ref_scores(y, log_softmax, rows[r].cum, v);
            /* the CPU draws from the scores without a cumulative one */
            float u[N], c = log_softmax ? log_softmax_shift(y) : 0.0f;
            for (int j = 0; j < N; j++)
                u[j] = log_softmax ? y[j] + c : y[j];
            int32_t want = ref_draw(u, temperature, m);
            fail_if(ids[r] != want, "drawn id", r, d);
            fail_if(y[ids[r]] == -FLT_MAX, "drew a disabled token", r, d);
            fail_if(fabsf(scores[r] - v[want]) > 1e-6f * (1.0f + fabsf(v[want])), "drawn score", r,
                    d);
            distinct += r == 0 && ids[r] != last;
            last = r == 0 ? ids[r] : last;
        }
    }
    /* the uniforms reach more than one token (a draw that ignored them
     * would pass the comparisons only by luck) */
    fail_if(distinct < 3, "draws that move with the uniform", 0, distinct);
    printf("draws at %.2f, %s: checked\n", (double)temperature,
           log_softmax ? "log-probabilities" : "masked logits");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_search_step libsaywho_cuda.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    sw_cuda_open_fn open_fn = lib ? (sw_cuda_open_fn)dlsym(lib, SW_CUDA_ENTRY) : NULL;
    if (!open_fn) {
        fprintf(stderr, "%s: %s\n", argv[1], lib ? "no entry point" : dlerror());
        return 1;
    }
    sw_error err = {SW_OK, {0}};
    sw_status st = open_fn(0, SW_BACKEND_ABI, getenv("SAYWHO_CUBLAS_PATH"), &be, &err);
    if (st != SW_OK) {
        printf("skipped: %s: %s\n", sw_status_name(st), err.msg);
        return st == SW_ERR_DEVICE ? 77 : 1;
    }
    if (!be->search_step || !be->supports(be, SW_CAP_SEARCH_SAMPLE, 0, 0)) {
        fprintf(stderr, "the backend has no search_step that draws\n");
        return 1;
    }

    /* logits in [-4, 4) from a fixed LCG; row 2's timestamps raised so that
     * their sum outweighs any text token; exact ties at the top of row 0
     * (ids 50 and 60), which the lower id wins */
    static float x[ROWS * N];
    static int8_t mask[N];
    uint32_t s = 12345;
    for (int i = 0; i < ROWS * N; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) * 0x1p-24f * 8.0f - 4.0f;
    }
    for (int j = TSB; j < N; j++)
        x[2 * N + j] += 2.0f;
    x[50] = x[60] = 6.0f;
    x[3 * N + 100] = 9.0f; /* one text token far above every timestamp's sum */
    for (int j = 0; j < N; j++)
        mask[j] = (int8_t)((j % 17 == 3 ? 1 : 0) | (j % 23 == 5 ? 2 : 0));
    mask[60] = 0; /* the tie stays */

    int64_t shape[2] = {ROWS, N}, n1 = N, plan_words = ROWS * SW_SEARCH_ROW_WORDS;
    int64_t work = SW_SEARCH_WORK(ROWS, N, SW_SEARCH_MAX_K);
    logits_d = device_tensor(SW_F32, 4, 2, shape);
    mask_d = device_tensor(SW_I8, 1, 1, &n1);
    plan_d = device_tensor(SW_I32, 4, 1, &plan_words);
    work_d = device_tensor(SW_F32, 4, 1, &work);
    ok_or_die(be->upload(be, logits_d.data, x, sizeof x, &err), &err, "upload");
    ok_or_die(be->upload(be, mask_d.data, mask, sizeof mask, &err), &err, "upload");

    sw_search_row rows[ROWS];
    make_rows(rows);
    check_search(x, mask, rows, 1, 0);  /* greedy over the masked logits */
    check_search(x, mask, rows, 1, 1);  /* greedy with scores */
    check_search(x, mask, rows, 10, 1); /* beam 5's 2 x beam */
    check_search(x, mask, rows, SW_SEARCH_MAX_K, 1);
    check_draws(x, mask, rows, 0.5f, 1);
    check_draws(x, mask, rows, 1.0f, 0);

    /* a draw asks for one token a row */
    sw_search_params bad = {2, 1, TSB, 0.5f};
    fail_if(be->search_step(be, &logits_d, &mask_d, &plan_d, &work_d, &bad, &err) != SW_ERR_ARG,
            "a draw of k 2 refused", 0, 0);

    be->free(be, logits_d.data);
    be->free(be, mask_d.data);
    be->free(be, plan_d.data);
    be->free(be, work_d.data);
    be->destroy(be);
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("search_step: every check passed\n");
    return 0;
}
