/* Word timestamps' last step: the cheapest monotonic path through the
 * negated cross-attention matrix (text tokens x audio frames), as
 * CTranslate2's DTW finds it. */
#ifndef SW_WHISPER_DTW_H
#define SW_WHISPER_DTW_H

#include <stdint.h>

#include "status.h"

/* matrix [n, m] (row-major, float32). Writes the path, from (0, 0) to
 * (n - 1, m - 1), into text_idx and time_idx (room for n + m entries each)
 * and its length into *length. Costs accumulate in float32; at equal cost the
 * horizontal step (time advances, text stays) wins, then the vertical one.
 * SW_ERR_NOMEM if the cost tables cannot be allocated. */
sw_status sw_negative_dtw(const float *matrix, int64_t n, int64_t m, int32_t *text_idx,
                          int32_t *time_idx, int64_t *length, sw_error *err);

#endif
