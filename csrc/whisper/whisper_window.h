/* One window's search state and the hypotheses it ends with, shared by the
 * step loop (whisper_generate.c) and the searches (whisper_sampling.c,
 * whisper_beam.c), so that none of those includes another's code. */
#ifndef SW_WHISPER_WINDOW_H
#define SW_WHISPER_WINDOW_H

#include <stdint.h>

#include "status.h"
#include "whisper_generate.h"
#include "whisper_logits.h"
#include "whisper_rng.h"

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

#endif
