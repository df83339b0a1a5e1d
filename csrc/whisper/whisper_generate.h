/* Whisper generation: from each window's prompt to finished token sequences
 * in one call, the way CTranslate2's WhisperReplica::generate does it on the
 * CPU (docs/whisper_decoding.md lists the behaviours and their sources).
 *
 * One call decodes n windows together: n = 1 for the sequential mode, a batch
 * for the batched mode. Every window has the same prompt layout; their rows
 * share one decoder state and one network call per step, and a window that
 * has finished is fed its end token until the others finish. Each row's
 * logits do not depend on the batch (the core sums every row alone), so a
 * window decodes to the same tokens alone or in a batch.
 *
 * Where each part lives: whisper_generate.c (prompt, no-speech probability,
 * the step loop over windows), whisper_beam.c (beam search),
 * whisper_sampling.c (greedy search, random sampling, top-k in CT2's order),
 * whisper_logits.c (the logits rules, log-softmax). */
#ifndef SW_WHISPER_GENERATE_H
#define SW_WHISPER_GENERATE_H

#include <stdint.h>

#include "backend.h"
#include "status.h"
#include "whisper_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CTranslate2's WhisperOptions (same names, same defaults) plus the ids the
 * rules refer to and the model config's suppress lists. */
typedef struct sw_whisper_generate_params {
    /* special ids; timestamps are no_timestamps + 1 .. n_vocab - 1 */
    int eot, sot, no_timestamps, no_speech;
    int beam_size;            /* 5; 1: greedy search, or sampling (below) */
    float patience;           /* 1: a beam search stops after round(beam * patience) ends */
    float length_penalty;     /* 1: final score = sum / length ** length_penalty */
    float repetition_penalty; /* 1: off */
    int no_repeat_ngram_size; /* 0: off */
    int max_length;           /* 448: prompt and new tokens */
    int sampling_topk;        /* 1: the best token; 0: the whole vocabulary; k: the best k */
    float sampling_temperature;
    int num_hypotheses;              /* 1 */
    int return_scores;               /* 0 */
    int return_no_speech_prob;       /* 0 */
    int max_initial_timestamp_index; /* 50 */
    int suppress_blank;              /* 1: suppress_ids_begin at the first sampled step */
    /* ids banned at every step; -1 stands for the config's suppress_ids */
    const int32_t *suppress_tokens; /* default {-1} */
    int n_suppress_tokens;
    const int32_t *suppress_ids; /* the model config's lists */
    int n_suppress_ids;
    const int32_t *suppress_ids_begin;
    int n_suppress_ids_begin;
    /* sampling at a temperature draws from xoshiro256** seeded by this
     * (through splitmix64); CT2's own generator is not reproduced */
    uint64_t seed;
} sw_whisper_generate_params;

sw_whisper_generate_params sw_whisper_generate_default_params(void);

/* One window's result: hypotheses best first (at most num_hypotheses), the
 * end token left out, with CT2's final scores (0 unless return_scores). */
typedef struct sw_whisper_hypothesis {
    int32_t *tokens;
    int n_tokens;
    float score;
} sw_whisper_hypothesis;

typedef struct sw_whisper_generation {
    sw_whisper_hypothesis *hyp;
    int n_hyp;
    float no_speech_prob; /* 0 unless return_no_speech_prob */
    /* decoder steps the call ran (its windows decode in lockstep), so a
     * device's counters can be read per step (bench/gpu_step_budget.py) */
    int steps;
} sw_whisper_generation;

/* What generation needs of a network: states of rows of KV cache, where
 * window w owns rows w * rows_per_window .. (w + 1) * rows_per_window - 1.
 * sw_whisper_generate uses the C model; tests drive a fake through it. */
typedef struct sw_whisper_decoder {
    void *ctx;
    int n_vocab;
    sw_status (*state_new)(void *ctx, int n_rows, void **state, sw_error *err);
    void (*state_free)(void *ctx, void *state);
    /* feeds tokens [n_rows, n_tokens]; logits [n_rows, n_vocab] of the last position */
    sw_status (*decode)(void *ctx, void *state, const int32_t *tokens, int n_rows, int n_tokens,
                        float *logits, sw_error *err);
    /* row s of dst continues row index[s] of src; dst == src is a reorder */
    sw_status (*copy)(void *ctx, void *dst, void *src, const int *index, int n, sw_error *err);
    /* copy also works between two states: the prompt is fed once, to one row
     * per window, and copied to the window's rows (as CT2 expands to the
     * beams after the prompt); otherwise it is fed to every row */
    int copy_other;
    /* optional (NULL: the batch keeps its finished windows, fed their end
     * token): keep windows keep[0..n_keep) (ascending positions in the
     * batch, rows_per_window rows each) as positions 0..n_keep-1, replacing
     * *state by one of n_keep * rows_per_window rows, so that finished
     * windows cost nothing while the others decode (CT2 drops finished
     * batch entries too) */
    sw_status (*narrow)(void *ctx, void **state, const int *keep, int n_keep, int rows_per_window,
                        sw_error *err);
    /* optional (NULL: decode, and the search reads the logits on the host):
     * decode, then search the last position's logits where they are
     * (backend.h search_step), so that only the rows' best tokens come back;
     * mask [n_vocab] is the same for the whole call, p for every step; rows
     * [n_rows] this step's plans (a row whose no_speech is >= 0 also gets
     * its no-speech probability). decode then also takes NULL logits: they
     * stay on the device */
    sw_status (*decode_search)(void *ctx, void *state, const int32_t *tokens, int n_rows,
                               int n_tokens, const int8_t *mask, const sw_search_params *p,
                               const sw_search_row *rows, int32_t *ids, float *scores,
                               float *no_speech_prob, sw_error *err);
    /* with decode_search: it also draws (p->temperature > 0, backend.h
     * SW_CAP_SEARCH_SAMPLE), so random sampling over the whole vocabulary
     * stays on the device too; the host sends each row's uniform */
    int sample_on_device;
} sw_whisper_decoder;

/* Decodes n_windows windows; prompts [n_windows, prompt_len] (row-major), all
 * with the same layout (previous text, sot, task tokens, prefix). Fills
 * out[n_windows]; free it with sw_whisper_generation_free. A prompt too long
 * for max_length or bad options: SW_ERR_ARG. */
sw_status sw_whisper_generate_with(const sw_whisper_decoder *dec, const int32_t *prompts,
                                   int n_windows, int prompt_len,
                                   const sw_whisper_generate_params *params,
                                   sw_whisper_generation *out, sw_error *err);

/* The same over the C model: window w reads item w of audio (n_windows ==
 * its batch). */
sw_status sw_whisper_generate(sw_whisper *model, const sw_whisper_audio *audio,
                              const int32_t *prompts, int n_windows, int prompt_len,
                              const sw_whisper_generate_params *params, sw_whisper_generation *out,
                              sw_error *err);

void sw_whisper_generation_free(sw_whisper_generation *out, int n_windows);

#ifdef __cplusplus
}
#endif
#endif
