/* The searches the step loop (whisper_generate.c) calls: greedy and random
 * sampling (whisper_sampling.c) and beam search (whisper_beam.c). A search
 * sees one window (whisper_window.h): its rows' logits of a step, and answers
 * with the tokens to feed next and, for beams, how its rows are reordered. */
#ifndef SW_WHISPER_SEARCH_H
#define SW_WHISPER_SEARCH_H

#include <stdint.h>

#include "whisper_window.h"

/* The k largest of values[0 .. n-1] (k <= n), best first, in CT2's CPU
 * order: k == 1 is std::max_element (the first maximum); otherwise
 * std::partial_sort of an index range with a > b, whose ties come out in
 * libstdc++'s heap order. ids: k entries. */
void sw_topk_ct2(const float *values, int n, int k, int32_t *ids);

/* One step of greedy search or sampling over logits [rows, n_vocab]. */
void sw_greedy_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits);

/* One step of beam search over logits [beam, n_vocab]. */
void sw_beam_step(sw_window *w, const sw_search_cfg *c, int step, const float *logits);

/* The same steps from the device's search step (backend.h search_step),
 * which applied the rules and found each row's best: greedy reads one
 * (id, score) per row; beam search 2 * beam per row, best first, and keeps
 * the best 2 * beam of them (ties: the lower row). */
void sw_greedy_step_chosen(sw_window *w, const sw_search_cfg *c, int step, const int32_t *ids,
                           const float *scores);
void sw_beam_step_chosen(sw_window *w, const sw_search_cfg *c, int step, const int32_t *ids,
                         const float *scores);

#endif
