/* Span-to-speaker alignment by sorting and one sweep; see align.h for the
 * rule. Times stay in double: a float loses milliseconds after a few hours. */
#include "align.h"

#include <math.h>
#include <stdlib.h>

typedef struct turn {
    double start, end;
    int32_t speaker; /* as given */
    int32_t dense;   /* 0 .. n_speakers-1, indexes the per-speaker sums */
} turn;

typedef struct span {
    double start;
    size_t index;
} span;

sw_align_params sw_align_default_params(void)
{
    sw_align_params p = {0.5, 0.1};
    return p;
}

static int by_speaker_then_start(const void *a, const void *b)
{
    const turn *x = a, *y = b;
    if (x->speaker != y->speaker)
        return x->speaker < y->speaker ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Start order decides both the sweep and the tie rule (first start, then the
 * lower speaker), so it must be total: the end breaks what is left. */
static int by_start_then_speaker(const void *a, const void *b)
{
    const turn *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->speaker != y->speaker)
        return x->speaker < y->speaker ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

static int by_span_start(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static sw_status check_inputs(const double *span_start, const double *span_end, size_t n_spans,
                              const double *turn_start, const double *turn_end,
                              const int32_t *turn_speaker, size_t n_turns, const sw_align_params *p,
                              sw_error *err)
{
    if (!(p->threshold >= 0.0 && p->threshold <= 1.0))
        return sw_fail(err, SW_ERR_ARG, "threshold must be between 0 and 1, got %g", p->threshold);
    if (!(p->tolerance >= 0.0 && isfinite(p->tolerance)))
        return sw_fail(err, SW_ERR_ARG, "tolerance must be finite and >= 0, got %g", p->tolerance);
    if ((n_spans && (!span_start || !span_end)) ||
        (n_turns && (!turn_start || !turn_end || !turn_speaker)))
        return sw_fail(err, SW_ERR_ARG, "missing span or turn arrays");
    for (size_t i = 0; i < n_spans; i++) {
        if (!isfinite(span_start[i]) || !isfinite(span_end[i]))
            return sw_fail(err, SW_ERR_ARG, "word %zu: start %g and end %g must be finite", i,
                           span_start[i], span_end[i]);
        if (span_end[i] < span_start[i])
            return sw_fail(err, SW_ERR_ARG, "word %zu ends (%g) before it starts (%g)", i,
                           span_end[i], span_start[i]);
    }
    for (size_t i = 0; i < n_turns; i++) {
        if (!isfinite(turn_start[i]) || !isfinite(turn_end[i]))
            return sw_fail(err, SW_ERR_ARG, "turn %zu: start %g and end %g must be finite", i,
                           turn_start[i], turn_end[i]);
        if (turn_end[i] < turn_start[i])
            return sw_fail(err, SW_ERR_ARG, "turn %zu ends (%g) before it starts (%g)", i,
                           turn_end[i], turn_start[i]);
        if (turn_speaker[i] < 0)
            return sw_fail(err, SW_ERR_ARG, "turn %zu: speaker %d must be >= 0", i,
                           (int)turn_speaker[i]);
    }
    return SW_OK;
}

/* Sorts the turns by speaker, merges each speaker's overlapping turns (so no
 * time counts twice for a speaker) and numbers the speakers densely. Touching
 * turns stay apart: merging them would change the sums only by rounding.
 * Returns the number of turns kept. */
static size_t merge_own_overlaps(turn *t, size_t n)
{
    qsort(t, n, sizeof *t, by_speaker_then_start);
    size_t kept = 0, speakers = 0;
    for (size_t i = 0; i < n; i++) {
        if (kept && t[kept - 1].speaker == t[i].speaker && t[i].start < t[kept - 1].end) {
            if (t[i].end > t[kept - 1].end)
                t[kept - 1].end = t[i].end;
            continue;
        }
        if (!kept || t[kept - 1].speaker != t[i].speaker)
            speakers++;
        t[kept] = t[i];
        t[kept].dense = (int32_t)(speakers - 1);
        kept++;
    }
    return kept;
}

sw_status sw_align_spans(const double *span_start, const double *span_end, size_t n_spans,
                         const double *turn_start, const double *turn_end,
                         const int32_t *turn_speaker, size_t n_turns, const sw_align_params *params,
                         int32_t *speaker, double *coverage, sw_error *err)
{
    sw_align_params p = params ? *params : sw_align_default_params();
    sw_status rc = check_inputs(span_start, span_end, n_spans, turn_start, turn_end, turn_speaker,
                                n_turns, &p, err);
    if (rc != SW_OK)
        return rc;
    if (n_spans && !speaker)
        return sw_fail(err, SW_ERR_ARG, "missing speaker output");
    for (size_t i = 0; i < n_spans; i++) {
        speaker[i] = SW_SPEAKER_UNKNOWN;
        if (coverage)
            coverage[i] = 0.0;
    }
    if (!n_spans || !n_turns)
        return SW_OK;
    if (n_turns > SIZE_MAX / sizeof(turn) || n_spans > SIZE_MAX / sizeof(span) ||
        n_turns > (size_t)INT32_MAX)
        return sw_fail(err, SW_ERR_NOMEM, "%zu words and %zu turns are too many", n_spans, n_turns);

    turn *t = malloc(n_turns * sizeof *t);
    span *s = malloc(n_spans * sizeof *s);
    double *reach = malloc(n_turns * sizeof *reach);     /* latest end among turns 0..i */
    double *sum = calloc(n_turns, sizeof *sum);          /* per dense speaker */
    size_t *stamp = calloc(n_turns, sizeof *stamp);      /* span number + 1 that touched it */
    size_t *touched = malloc(n_turns * sizeof *touched); /* turn that first touched a speaker */
    if (!t || !s || !reach || !sum || !stamp || !touched) {
        rc = sw_fail(err, SW_ERR_NOMEM, "alignment of %zu words and %zu turns: out of memory",
                     n_spans, n_turns);
        goto done;
    }
    for (size_t i = 0; i < n_turns; i++)
        t[i] = (turn){turn_start[i], turn_end[i], turn_speaker[i], 0};
    size_t nt = merge_own_overlaps(t, n_turns);
    qsort(t, nt, sizeof *t, by_start_then_speaker);
    for (size_t i = 0; i < nt; i++)
        reach[i] = i && reach[i - 1] > t[i].end ? reach[i - 1] : t[i].end;
    for (size_t i = 0; i < n_spans; i++)
        s[i] = (span){span_start[i], i};
    qsort(s, n_spans, sizeof *s, by_span_start);

    size_t first = 0; /* turns before it all end before the current span starts */
    for (size_t k = 0; k < n_spans; k++) {
        size_t i = s[k].index;
        double a = span_start[i], b = span_end[i];
        while (first < nt && reach[first] < a - p.tolerance)
            first++;
        if (b == a) {
            /* An instant: the containing turn, else the nearest within the
             * tolerance; on equal distance the turn met first (earlier start). */
            size_t best = nt;
            double best_gap = INFINITY;
            for (size_t j = first; j < nt && t[j].start <= a + p.tolerance; j++) {
                double gap = fmax(fmax(t[j].start - a, a - t[j].end), 0.0);
                if (gap <= p.tolerance && gap < best_gap) {
                    best = j;
                    best_gap = gap;
                }
            }
            if (best < nt) {
                speaker[i] = t[best].speaker;
                if (coverage)
                    coverage[i] = 1.0;
            }
            continue;
        }
        size_t n_touched = 0;
        for (size_t j = first; j < nt && t[j].start < b; j++) {
            double overlap = fmin(b, t[j].end) - fmax(a, t[j].start);
            if (!(overlap > 0.0))
                continue;
            size_t d = (size_t)t[j].dense;
            if (stamp[d] != k + 1) {
                stamp[d] = k + 1;
                sum[d] = 0.0;
                touched[n_touched++] = j;
            }
            sum[d] += overlap;
        }
        if (!n_touched)
            continue;
        /* Touched in start order, so keeping the first of equal sums is the
         * documented tie rule. */
        size_t win = touched[0];
        for (size_t m = 1; m < n_touched; m++)
            if (sum[t[touched[m]].dense] > sum[t[win].dense])
                win = touched[m];
        double share = fmin(sum[t[win].dense] / (b - a), 1.0);
        if (coverage)
            coverage[i] = share;
        if (share >= p.threshold)
            speaker[i] = t[win].speaker;
    }

done:
    free(t);
    free(s);
    free(reach);
    free(sum);
    free(stamp);
    free(touched);
    return rc;
}
