/* Word-to-speaker alignment: hand-built cases for each rule, bad input, and
 * random words and turns against a plain O(W*T) reference. */
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "check.h"

static sw_status align(const double *ws, const double *we, size_t nw, const double *ts,
                       const double *te, const int32_t *sp, size_t nt, double threshold,
                       int32_t *out, double *cov)
{
    sw_align_params p = sw_align_default_params();
    p.threshold = threshold;
    sw_error err = {SW_OK, ""};
    sw_status rc = sw_align_spans(ws, we, nw, ts, te, sp, nt, &p, out, cov, &err);
    if (rc != SW_OK)
        CHECK(strlen(err.msg) > 0);
    return rc;
}

static void test_rules(void)
{
    /* turns, deliberately unsorted: speaker 1 on [0, 2), 0 on [2, 4), 2 on [5, 6) */
    const double ts[] = {2.0, 5.0, 0.0}, te[] = {4.0, 6.0, 2.0};
    const int32_t sp[] = {0, 2, 1};
    const double ws[] = {0.5, 1.5, 2.5, 1.0, 4.2, 4.0, 9.0, 1.0};
    const double we[] = {1.0, 2.7, 3.5, 3.0, 5.4, 5.0, 9.5, 1.0};
    int32_t out[8];
    double cov[8];
    CHECK(align(ws, we, 8, ts, te, sp, 3, 0.5, out, cov) == SW_OK);
    CHECK(out[0] == 1); /* inside one turn */
    CHECK_NEAR(cov[0], 1.0, 0);
    CHECK(out[1] == 0); /* spans two turns: 0.5 s of 1, 0.7 s of 0 */
    CHECK_NEAR(cov[1], 0.7 / 1.2, 1e-12);
    CHECK(out[2] == 0);
    CHECK(out[3] == 1); /* a tie (1 s each) goes to the turn that starts first */
    CHECK_NEAR(cov[3], 0.5, 1e-12);
    CHECK(out[4] == SW_SPEAKER_UNKNOWN); /* best is 0.4 of 1.2 s: below 0.5 */
    CHECK_NEAR(cov[4], 0.4 / 1.2, 1e-12);
    CHECK(out[5] == SW_SPEAKER_UNKNOWN); /* in the gap between turns */
    CHECK_NEAR(cov[5], 0.0, 0);
    CHECK(out[6] == SW_SPEAKER_UNKNOWN); /* after every turn */
    CHECK(out[7] == 1);                  /* an instant inside a turn */

    /* the threshold is inclusive; 0 names the best speaker whatever its share */
    CHECK(align(ws + 4, we + 4, 1, ts, te, sp, 3, 0.4 / 1.2, out, cov) == SW_OK);
    CHECK(out[0] == 2);
    CHECK(align(ws + 4, we + 4, 1, ts, te, sp, 0.0, 0.0, out, cov) == SW_OK);
    CHECK(out[0] == SW_SPEAKER_UNKNOWN); /* no turns at all */
}

static void test_instants(void)
{
    const double ts[] = {0.0, 2.0, 3.0}, te[] = {2.0, 2.875, 4.0};
    const int32_t sp[] = {4, 7, 9};
    /* boundary of two turns, inside, 0.05 s after a turn, 0.05 s before
     * one, in the middle of a 0.125 s gap (equal distance: the earlier turn),
     * and too far from any turn */
    const double w[] = {2.0, 1.0, 4.05, -0.05, 2.9375, 4.5};
    int32_t out[6];
    double cov[6];
    CHECK(align(w, w, 6, ts, te, sp, 3, 0.5, out, cov) == SW_OK);
    CHECK(out[0] == 4);
    CHECK(out[1] == 4);
    CHECK(out[2] == 9);
    CHECK(out[3] == 4);
    CHECK(out[4] == 7);
    CHECK(out[5] == SW_SPEAKER_UNKNOWN);
    CHECK_NEAR(cov[0], 1.0, 0);
    CHECK_NEAR(cov[5], 0.0, 0);
}

static void test_overlaps_and_edges(void)
{
    /* a speaker's own overlapping turns count once */
    const double ts[] = {0.0, 1.0, 2.5}, te[] = {2.0, 3.0, 2.8};
    const int32_t sp[] = {3, 3, 5};
    const double ws[] = {0.0}, we[] = {3.0};
    int32_t out[1];
    double cov[1];
    CHECK(align(ws, we, 1, ts, te, sp, 3, 0.5, out, cov) == SW_OK);
    CHECK(out[0] == 3);
    CHECK_NEAR(cov[0], 1.0, 0);

    /* empty inputs */
    CHECK(align(NULL, NULL, 0, ts, te, sp, 3, 0.5, NULL, NULL) == SW_OK);
    CHECK(align(ws, we, 1, NULL, NULL, NULL, 0, 0.5, out, cov) == SW_OK);
    CHECK(out[0] == SW_SPEAKER_UNKNOWN);

    /* bad input */
    const double nan_[] = {NAN}, back[] = {-1.0};
    const int32_t neg[] = {-2};
    CHECK(align(nan_, we, 1, ts, te, sp, 3, 0.5, out, cov) == SW_ERR_ARG);
    CHECK(align(ws, back, 1, ts, te, sp, 3, 0.5, out, cov) == SW_ERR_ARG);
    CHECK(align(ws, we, 1, ts, back, sp, 1, 0.5, out, cov) == SW_ERR_ARG);
    CHECK(align(ws, we, 1, ts, te, neg, 1, 0.5, out, cov) == SW_ERR_ARG);
    CHECK(align(ws, we, 1, ts, te, sp, 3, 1.5, out, cov) == SW_ERR_ARG);
    CHECK(align(ws, we, 1, ts, te, sp, 3, NAN, out, cov) == SW_ERR_ARG);
}

static double uniform(unsigned long long *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* The rule of align.h, one word against every turn, turns visited in
 * (start, speaker) order as the sweep visits them. */
static void reference(const double *ws, const double *we, size_t nw, const double *ts,
                      const double *te, const int32_t *sp, const size_t *order, size_t nt,
                      int32_t n_speakers, double threshold, int32_t *out)
{
    double *sum = malloc((size_t)n_speakers * sizeof *sum);
    double *first = malloc((size_t)n_speakers * sizeof *first);
    for (size_t i = 0; i < nw; i++) {
        for (int32_t k = 0; k < n_speakers; k++) {
            sum[k] = 0.0;
            first[k] = INFINITY;
        }
        for (size_t m = 0; m < nt; m++) {
            size_t j = order[m];
            double overlap = fmin(we[i], te[j]) - fmax(ws[i], ts[j]);
            if (overlap > 0.0) {
                sum[sp[j]] += overlap;
                if (first[sp[j]] == INFINITY)
                    first[sp[j]] = ts[j];
            }
        }
        int32_t best = -1;
        for (int32_t k = 0; k < n_speakers; k++)
            if (first[k] != INFINITY &&
                (best < 0 || sum[k] > sum[best] || (sum[k] == sum[best] && first[k] < first[best])))
                best = k;
        out[i] = best >= 0 && fmin(sum[best] / (we[i] - ws[i]), 1.0) >= threshold ? best : -1;
    }
    free(sum);
    free(first);
}

static void test_random(void)
{
    enum { NW = 20000, NT = 600, NS = 5 };
    unsigned long long state = 12345;
    double *ts = malloc(NT * sizeof *ts), *te = malloc(NT * sizeof *te);
    int32_t *sp = malloc(NT * sizeof *sp);
    size_t *order = malloc(NT * sizeof *order);
    /* exclusive turns with gaps, stored shuffled */
    double t = 0.0;
    for (size_t j = 0; j < NT; j++) {
        t += uniform(&state) < 0.3 ? uniform(&state) : 0.0;
        ts[j] = t;
        t += 0.2 + 5.0 * uniform(&state);
        te[j] = t;
        sp[j] = (int32_t)(uniform(&state) * NS);
        order[j] = j;
    }
    for (size_t j = NT - 1; j > 0; j--) {
        size_t k = (size_t)(uniform(&state) * (double)(j + 1));
        double a = ts[j], b = te[j];
        int32_t c = sp[j];
        ts[j] = ts[k], te[j] = te[k], sp[j] = sp[k];
        ts[k] = a, te[k] = b, sp[k] = c;
    }
    /* the reference visits turns in start order */
    for (size_t j = 1; j < NT; j++)
        for (size_t m = j; m > 0 && ts[order[m]] < ts[order[m - 1]]; m--) {
            size_t x = order[m];
            order[m] = order[m - 1];
            order[m - 1] = x;
        }
    double *ws = malloc(NW * sizeof *ws), *we = malloc(NW * sizeof *we);
    for (size_t i = 0; i < NW; i++) {
        ws[i] = uniform(&state) * (t + 2.0) - 1.0;
        we[i] = ws[i] + (uniform(&state) < 0.05 ? 0.0 : 3.0 * uniform(&state));
    }
    int32_t *got = malloc(NW * sizeof *got), *want = malloc(NW * sizeof *want);
    CHECK(align(ws, we, NW, ts, te, sp, NT, 0.5, got, NULL) == SW_OK);
    reference(ws, we, NW, ts, te, sp, order, NT, NS, 0.5, want);
    size_t differ = 0, instants = 0;
    for (size_t i = 0; i < NW; i++) {
        if (we[i] == ws[i]) { /* the reference does not do instants */
            instants++;
            continue;
        }
        differ += got[i] != want[i];
    }
    CHECK(differ == 0);
    CHECK(instants > 0);
    free(ts), free(te), free(sp), free(order), free(ws), free(we), free(got), free(want);
}

int main(void)
{
    test_rules();
    test_instants();
    test_overlaps_and_edges();
    test_random();
    return sw_check_summary("test_align");
}
