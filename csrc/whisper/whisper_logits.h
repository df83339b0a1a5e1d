/* Host-side math of the token choice (saywho.whisper.logits): what every
 * decoding step does to the logits of each sequence, in C because NumPy
 * spends more on it than the network's step costs for small models. */
#ifndef SW_WHISPER_LOGITS_H
#define SW_WHISPER_LOGITS_H

#include <stdint.h>

/* out[r, :] = log_softmax(x[r, :]) the way CTranslate2's CPU kernel rounds
 * it: max in float32, exp of the float32 differences summed in double and
 * rounded to float32, then one float32 constant -max - logf(sum) added to
 * every entry (so a row's order is kept). out may be x. */
void sw_log_softmax_rows(const float *x, int64_t rows, int64_t n, float *out);

#endif
