/* The logits rules of a decoding step and their float32 arithmetic, as
 * CTranslate2's CPU path does them (decoding.cc make_logits_processors,
 * decoding_utils.cc, whisper.cc ApplyTimestampRules, cpu/kernels.cc). */
#ifndef SW_WHISPER_LOGITS_H
#define SW_WHISPER_LOGITS_H

#include <float.h>
#include <stdint.h>

/* A disabled token's logit: float32's lowest finite value, not -inf, written
 * at once (CT2's CPU DisableTokens), so later rules see it. */
#define SW_LOGIT_DISABLED (-FLT_MAX)

/* out[r, :] = log_softmax(x[r, :]) the way CTranslate2's CPU kernel rounds
 * it: max in float32, exp of the float32 differences summed in double and
 * rounded to float32, then one float32 constant -max - logf(sum) added to
 * every entry (so a row's order is kept). out may be x. */
void sw_log_softmax_rows(const float *x, int64_t rows, int64_t n, float *out);

/* softmax(x)[i] of one row: exp(x - max) in float32 times the float32
 * reciprocal of their sum (summed in double, rounded). */
float sw_softmax_at(const float *x, int n, int i);

/* softmax of one row into out (may be x). */
void sw_softmax_row(const float *x, int n, float *out);

/* The rules of one generate call, in CT2's order: repetition penalty,
 * no-repeat n-gram, suppressed tokens, suppressed at the first sampled step
 * (suppress_blank), the timestamp rules. */
typedef struct sw_logits_rules {
    int n_vocab;
    float repetition_penalty; /* 1: off */
    int no_repeat_ngram_size; /* 0: off */
    const int32_t *suppress;  /* every step */
    int n_suppress;
    const int32_t *suppress_begin; /* at step == sample_begin */
    int n_suppress_begin;
    int timestamps; /* timestamp rules on */
    int eot, no_timestamps, timestamp_begin, timestamp_end, max_initial_timestamp;
    int sample_begin; /* the forced prefix's length: the first sampled step */
} sw_logits_rules;

/* The timestamp rules' part that depends on a row's tokens: at most two
 * ranges [from, to) of ids to disable (besides no_timestamps, always), and
 * whether the check follows: if the timestamps' summed probability beats
 * every text token's, the text tokens are disabled too. The device's search
 * step (backend.h search_step) gets exactly this. */
typedef struct sw_timestamp_plan {
    int from[2], to[2];
    int n;
    int check;
} sw_timestamp_plan;

void sw_timestamp_plan_of(const sw_logits_rules *r, int step, const int32_t *seq,
                          sw_timestamp_plan *plan);

/* Applies the rules to one row of logits at `step`, in place; seq holds the
 * row's tokens chosen at steps 0 .. step - 1 (prefix included, the start
 * token not). scratch: n_vocab floats. */
void sw_logits_rules_apply(const sw_logits_rules *r, int step, float *logits, const int32_t *seq,
                           float *scratch);

#endif
