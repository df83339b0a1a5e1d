/* What the step loop (whisper_generate.c) shares with the searches
 * (whisper_sampling.c: greedy and random sampling; whisper_beam.c: beam
 * search). A search sees one window: its rows' logits of a step, and answers
 * with the tokens to feed next and, for beams, how its rows are reordered. */
#ifndef SW_WHISPER_SEARCH_H
#define SW_WHISPER_SEARCH_H

#include <stdint.h>

#include "status.h"
#include "whisper_generate.h"
#include "whisper_logits.h"

/* xoshiro256** (seeded through splitmix64): the generator of random sampling. */
typedef struct sw_rng {
    uint64_t s[4];
} sw_rng;

void sw_rng_seed(sw_rng *rng, uint64_t seed);
/* uniform in [0, 1), 53 bits */
double sw_rng_uniform(sw_rng *rng);

/* The k largest of values[0 .. n-1] (k <= n), best first, in CT2's CPU
 * order: k == 1 is std::max_element (the first maximum); otherwise
 * std::partial_sort of an index range with a > b, whose ties come out in
 * libstdc++'s heap order. ids: k entries. */
void sw_topk_ct2(const float *values, int n, int k, int32_t *ids);

/* The settings of one generate call that every window's search reads. */
typedef struct sw_search_cfg {
    const sw_whisper_generate_params *p;
    sw_logits_rules rules;
    int n_vocab;
    int rows;       /* rows of the decoder state per window */
    int max_length; /* search steps, the start token's included */
    int random;     /* greedy rows draw at a temperature */
} sw_search_cfg;

/* Hypotheses as they end: tokens and raw (cumulative) score. */
typedef struct sw_hyps {
    sw_whisper_hypothesis *h;
    int n, cap;
} sw_hyps;

int sw_hyps_add(sw_hyps *hs, const int32_t *tokens, int n_tokens, float raw_score);
void sw_hyps_free(sw_hyps *hs);

/* CT2's finalize_hypothesis_score, in float32. */
float sw_final_score(float score, int length, float length_penalty);

/* Scores each hypothesis, sorts them best first (stable) and hands the best
 * num_hypotheses to out; hs is emptied. */
void sw_hyps_finish(sw_hyps *hs, float length_penalty, int num_hypotheses,
                    sw_whisper_generation *out);

/* One window's search. */
typedef struct sw_window {
    sw_logits_rules rules; /* the call's, with this window's timestamp rules */
    int done;
    int failed;            /* out of host memory while registering a hypothesis */
    const int32_t *prefix; /* forced tokens after the start token */
    int32_t *feed;         /* [rows] the tokens the rows are fed next */
    int *reorder;          /* [rows] row r continues row reorder[r] (window-local) */
    int has_reorder;
    sw_hyps hyps;
    sw_rng rng;
    /* greedy and sampling: one independent search per row */
    int32_t *history; /* [rows, max_length] tokens chosen */
    int32_t *hyp_tok; /* [rows, max_length] the same without end tokens */
    int *hyp_len;     /* [rows] */
    float *score;     /* [rows] */
    int *alive;       /* [rows] still searching */
    float *scaled;    /* [n_vocab] sampling: the candidates' scores over the temperature */
    double *cdf;      /* [n_vocab] */
    /* beam search */
    int32_t *seq, *cand_seq; /* [beam, max_length], [2 beam, max_length] */
    float *cum;              /* cum_store once there are cumulative scores, else NULL */
    float *cum_store;        /* [beam] */
    float *cand_score;       /* [2 beam] */
    int32_t *cand_id, *cand_origin, *cand_word, *active;
    int expand_after_first_step, top_beam_finished;
    float *work; /* [rows, n_vocab] */
} sw_window;

/* Allocations of a window (rows, beam or not); feeds start_id on every row. */
sw_status sw_window_init(sw_window *w, const sw_search_cfg *c, int32_t start_id,
                         const int32_t *prefix, uint64_t seed, sw_error *err);
void sw_window_free(sw_window *w);

/* One step of greedy search or sampling over logits [rows, n_vocab]. */
void sw_greedy_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits);

/* One step of beam search over logits [beam, n_vocab]. */
void sw_beam_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits);

#endif
