/* Beam search: CTranslate2's BeamSearch::search on the CPU, for one window,
 * return_prefix on, the end token left out of the hypotheses
 * (docs/whisper_decoding.md, "Beam search").
 *
 * Each step: the rules and log-softmax of every beam, plus its cumulative
 * score; the best 2 * beam candidates over all beams (top-k in CT2's tie
 * order); of the first `beam` candidates each that ends is registered and
 * its place goes to the next candidate of the second half that does not;
 * the state's rows follow the kept candidates' beams. */
#include <math.h>
#include <string.h>

#include "whisper_search.h"

/* the score CT2 gives forced prefix tokens on secondary beams, and an end
 * token drawn by a secondary beam right after the prefix */
#define PREFIX_PENALTY (-1e10f)

/* std::round of beam * patience (halves away from zero) */
static int max_candidates(const sw_whisper_generate_params *p)
{
    return (int)floor((double)((float)p->beam_size * p->patience) + 0.5);
}

/* The rest of a step once the 2 * beam candidates are known (cand_id's
 * order, cand_score, cand_origin, cand_word): the forced prefix, the ends,
 * the beams kept. */
static void take_candidates(sw_window *w, const sw_search_cfg *c, int step)
{
    const sw_whisper_generate_params *p = c->p;
    int beam = p->beam_size, k2 = 2 * beam, ml = c->max_length;
    int prefix_len = w->rules.sample_begin, eot = p->eot;
    if (prefix_len > 0 && step <= prefix_len)
        for (int k = 0; k < k2; k++) {
            if (step < prefix_len) {
                w->cand_word[k] = w->prefix[step];
                w->cand_score[k] = k == 0 ? 0.0f : PREFIX_PENALTY;
                w->cand_origin[k] = 0;
            } else if (k > 0 && w->cand_word[k] == eot) {
                w->cand_word[k] = 0;
                w->cand_score[k] = PREFIX_PENALTY;
                w->cand_origin[k] = 0;
            }
        }
    for (int k = 0; k < k2; k++) {
        int32_t *dst = w->cand_seq + (size_t)k * ml;
        memcpy(dst, w->seq + (size_t)w->cand_origin[k] * ml, (size_t)step * sizeof *dst);
        dst[step] = w->cand_word[k];
    }

    int is_last = step + 1 == ml, secondary = beam;
    for (int k = 0; k < beam; k++) {
        int32_t word = w->cand_word[k];
        int next = k;
        if ((word == eot && step >= prefix_len) || is_last) {
            if (k == 0)
                w->top_beam_finished = 1;
            int end = word == eot ? step : step + 1;
            if (sw_hyps_add(&w->hyps, w->cand_seq + (size_t)k * ml, end, w->cand_score[k]) != 0) {
                w->failed = 1;
                w->done = 1;
                return;
            }
            for (int j = secondary; j < k2; j++)
                if (w->cand_word[j] != eot) {
                    next = j;
                    secondary = j + 1;
                    break;
                }
        }
        w->active[k] = next;
    }

    int finished;
    if (is_last)
        finished = 1;
    else if (p->length_penalty == 0.0f)
        finished = w->top_beam_finished && w->hyps.n >= p->num_hypotheses;
    else
        finished = w->hyps.n >= max_candidates(p);
    if (finished) {
        w->done = 1;
        return;
    }
    for (int k = 0; k < beam; k++) {
        int a = w->active[k];
        w->reorder[k] = w->cand_origin[a];
        memcpy(w->seq + (size_t)k * ml, w->cand_seq + (size_t)a * ml,
               (size_t)(step + 1) * sizeof *w->seq);
        w->cum_store[k] = w->cand_score[a];
        w->feed[k] = w->cand_word[a];
    }
    w->cum = w->cum_store;
    w->has_reorder = 1;
}

void sw_beam_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits)
{
    const sw_whisper_generate_params *p = c->p;
    int beam = p->beam_size, k2 = 2 * beam, n = c->n_vocab, ml = c->max_length;
    int expanded = !w->expand_after_first_step || step > 0;
    int rows = expanded ? beam : 1;

    for (int r = 0; r < rows; r++) {
        float *x = w->work + (size_t)r * n;
        memcpy(x, logits + (size_t)r * n, (size_t)n * sizeof *x);
        sw_logits_rules_apply(&w->rules, step, x, w->seq + (size_t)r * ml, w->scaled);
        sw_log_softmax_rows(x, 1, n, x);
        if (w->cum)
            for (int j = 0; j < n; j++)
                x[j] += w->cum[r];
    }
    sw_topk_ct2(w->work, rows * n, k2, w->cand_id);
    for (int k = 0; k < k2; k++) {
        int32_t id = w->cand_id[k];
        w->cand_score[k] = w->work[id];
        w->cand_origin[k] = expanded ? id / n : 0;
        w->cand_word[k] = id % n;
    }
    take_candidates(w, c, step);
}

void sw_beam_step_chosen(sw_window *w, const sw_search_cfg *c, int step, const int32_t *ids,
                         const float *scores)
{
    int k2 = 2 * c->p->beam_size;
    int expanded = !w->expand_after_first_step || step > 0;
    int rows = expanded ? c->p->beam_size : 1;
    int next[SW_SEARCH_MAX_K]; /* each row's next candidate */
    for (int r = 0; r < rows; r++)
        next[r] = 0;
    /* the rows' lists are best first: merge them, ties to the lower row */
    for (int k = 0; k < k2; k++) {
        int b = 0; /* row 0 has candidates left: k2 were taken in all */
        for (int r = 1; r < rows; r++)
            if (next[r] < k2 &&
                (next[b] >= k2 || scores[r * k2 + next[r]] > scores[b * k2 + next[b]]))
                b = r;
        int j = b * k2 + next[b]++;
        w->cand_score[k] = scores[j];
        w->cand_origin[k] = b;
        w->cand_word[k] = ids[j];
    }
    take_candidates(w, c, step);
}
