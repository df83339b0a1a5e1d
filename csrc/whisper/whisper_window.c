/* A window's hypotheses and memory (whisper_window.h). */
#include "whisper_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- hypotheses ---- */

int sw_hyps_add(sw_hyps *hs, const int32_t *tokens, int n_tokens, float raw_score)
{
    if (hs->n == hs->cap) {
        int cap = hs->cap ? 2 * hs->cap : 8;
        sw_whisper_hypothesis *h = realloc(hs->h, (size_t)cap * sizeof *h);
        if (!h)
            return -1;
        hs->h = h;
        hs->cap = cap;
    }
    int32_t *copy = malloc((size_t)(n_tokens > 0 ? n_tokens : 1) * sizeof *copy);
    if (!copy)
        return -1;
    if (n_tokens > 0)
        memcpy(copy, tokens, (size_t)n_tokens * sizeof *copy);
    sw_whisper_hypothesis *h = &hs->h[hs->n++];
    h->tokens = copy; /* owned by hs from here */
    h->n_tokens = n_tokens;
    h->score = raw_score;
    return 0;
}

void sw_hyps_free(sw_hyps *hs)
{
    for (int i = 0; i < hs->n; i++)
        free(hs->h[i].tokens);
    free(hs->h);
    memset(hs, 0, sizeof *hs);
}

float sw_final_score(float score, int length, float length_penalty)
{
    return score / powf((float)length, length_penalty);
}

void sw_hyps_finish(sw_hyps *hs, float length_penalty, int num_hypotheses,
                    sw_whisper_generation *out)
{
    for (int i = 0; i < hs->n; i++)
        hs->h[i].score = sw_final_score(hs->h[i].score, hs->h[i].n_tokens, length_penalty);
    /* insertion sort, best first: stable, like Python's sort and libstdc++'s
     * for the few entries there are */
    for (int i = 1; i < hs->n; i++) {
        sw_whisper_hypothesis x = hs->h[i];
        int j = i;
        for (; j > 0 && hs->h[j - 1].score < x.score; j--)
            hs->h[j] = hs->h[j - 1];
        hs->h[j] = x;
    }
    int keep = hs->n < num_hypotheses ? hs->n : num_hypotheses;
    for (int i = keep; i < hs->n; i++)
        free(hs->h[i].tokens);
    out->hyp = hs->h;
    out->n_hyp = keep;
    memset(hs, 0, sizeof *hs);
}

/* ---- a window's memory ---- */

sw_status sw_window_init(sw_window *w, const sw_search_cfg *c, int32_t start_id,
                         const int32_t *prefix, uint64_t seed, sw_error *err)
{
    memset(w, 0, sizeof *w);
    int rows = c->rows, n = c->n_vocab, ml = c->max_length, beam = c->p->beam_size > 1;
    size_t seq = (size_t)rows * (size_t)ml;
    int n_cand = 2 * rows > c->p->sampling_topk ? 2 * rows : c->p->sampling_topk;
    w->prefix = prefix;
    w->rules = c->rules;
    /* timestamp rules unless the start token is <|notimestamps|> */
    w->rules.timestamps = start_id != c->p->no_timestamps;
    w->feed = malloc((size_t)rows * sizeof *w->feed);
    w->reorder = malloc((size_t)rows * sizeof *w->reorder);
    w->work = malloc((size_t)rows * (size_t)n * sizeof *w->work);
    w->scaled = malloc((size_t)n * sizeof *w->scaled);
    w->cand_id = malloc((size_t)n_cand * sizeof *w->cand_id);
    int ok = w->feed && w->reorder && w->work && w->scaled && w->cand_id;
    if (beam) {
        w->seq = calloc(seq, sizeof *w->seq);
        w->cand_seq = calloc(2 * seq, sizeof *w->cand_seq);
        w->cum_store = malloc((size_t)rows * sizeof *w->cum_store);
        w->cand_score = malloc(2 * (size_t)rows * sizeof *w->cand_score);
        w->cand_origin = malloc(2 * (size_t)rows * sizeof *w->cand_origin);
        w->cand_word = malloc(2 * (size_t)rows * sizeof *w->cand_word);
        w->active = malloc((size_t)rows * sizeof *w->active);
        ok = ok && w->seq && w->cand_seq && w->cum_store && w->cand_score && w->cand_origin &&
             w->cand_word && w->active;
    } else {
        w->history = calloc(seq, sizeof *w->history);
        w->hyp_tok = malloc(seq * sizeof *w->hyp_tok);
        w->hyp_len = calloc((size_t)rows, sizeof *w->hyp_len);
        w->score = calloc((size_t)rows, sizeof *w->score);
        w->alive = malloc((size_t)rows * sizeof *w->alive);
        w->cdf = malloc((size_t)n * sizeof *w->cdf);
        ok = ok && w->history && w->hyp_tok && w->hyp_len && w->score && w->alive && w->cdf;
    }
    if (!ok) {
        sw_window_free(w);
        return sw_fail(err, SW_ERR_NOMEM, "whisper generate: out of host memory");
    }
    for (int r = 0; r < rows; r++) {
        w->feed[r] = start_id;
        if (w->alive)
            w->alive[r] = 1;
    }
    if (beam) {
        /* CT2 expands to the beams after the first step when the candidates
         * fit in one row; otherwise every beam starts, all but the first with
         * the lowest score */
        w->expand_after_first_step = 2 * rows <= n;
        if (!w->expand_after_first_step) {
            for (int r = 0; r < rows; r++)
                w->cum_store[r] = r == 0 ? 0.0f : SW_LOGIT_DISABLED;
            w->cum = w->cum_store;
        }
    }
    sw_rng_seed(&w->rng, seed);
    return SW_OK;
}

void sw_window_free(sw_window *w)
{
    void *all[] = {w->feed,      w->reorder,  w->work,      w->scaled,     w->cand_id,
                   w->seq,       w->cand_seq, w->cum_store, w->cand_score, w->cand_origin,
                   w->cand_word, w->active,   w->history,   w->hyp_tok,    w->hyp_len,
                   w->score,     w->alive,    w->cdf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    sw_hyps_free(&w->hyps);
    memset(w, 0, sizeof *w);
}
