/* Words (or segments) meet speaker turns: each span gets the speaker whose
 * turns cover most of it, or none when that speaker covers too little.
 *
 * The rule, for a span [s, e] with e > s: sum, per speaker, the overlap of
 * the span with that speaker's turns; the speaker with the largest sum wins,
 * and its share of the span, sum / (e - s), is the span's coverage. A
 * coverage below `threshold` makes the span UNKNOWN (-1). Exact ties go to
 * the speaker whose overlapping turn starts first, then to the lower index.
 *
 * A span of zero duration (e == s) is an instant: it takes the speaker of a
 * turn containing it (start <= s <= end; on a boundary shared by two turns,
 * the one that starts first), else of the nearest turn at most `tolerance`
 * seconds away, with coverage 1; otherwise UNKNOWN with coverage 0.
 *
 * Turns need not be sorted. A speaker's own overlapping turns are merged
 * first, so no stretch of time is counted twice for one speaker; turns of
 * different speakers may overlap (each speaker's sum counts the overlap), but
 * the aligner is meant for exclusive turns, one speaker at a time.
 *
 * Cost: sorting, O((W + T) log(W + T)), plus one visit per overlapping
 * (span, turn) pair. When the spans do not overlap one another (Whisper's
 * words and segments) and the turns are exclusive, there are fewer than
 * W + T such pairs. */
#ifndef SW_ALIGN_H
#define SW_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_SPEAKER_UNKNOWN (-1)

typedef struct sw_align_params {
    double threshold; /* least coverage that names a speaker, in [0, 1]; 0.5 */
    double tolerance; /* seconds an instant may lie outside every turn; 0.1 */
} sw_align_params;

sw_align_params sw_align_default_params(void);

/* For each span i: speaker[i] (a turn_speaker value, or SW_SPEAKER_UNKNOWN)
 * and coverage[i] (the winning speaker's share of the span, also when it is
 * below the threshold; NULL to skip). Times are seconds, finite, end >= start;
 * speakers are >= 0. Anything else is SW_ERR_ARG naming the first bad item. */
sw_status sw_align_spans(const double *span_start, const double *span_end, size_t n_spans,
                         const double *turn_start, const double *turn_end,
                         const int32_t *turn_speaker, size_t n_turns, const sw_align_params *params,
                         int32_t *speaker, double *coverage, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
