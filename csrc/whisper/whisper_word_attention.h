/* The forward pass that word timestamps read (CTranslate2's Whisper.align):
 * the decoder over sot sequence + <|notimestamps|> + text + <|endoftext|>,
 * keeping the cross-attention of the alignment heads at every position and
 * each text token's probability. The rest (normalisation, median filter,
 * DTW, word boundaries) is python/saywho/whisper/word_dtw.py and
 * whisper_dtw.c. */
#ifndef SW_WHISPER_WORD_ATTENTION_H
#define SW_WHISPER_WORD_ATTENTION_H

#include <stdint.h>

#include "status.h"
#include "whisper_model.h"

/* audio holds one window (batch 1). The start sequence is fed at once, then
 * each later token alone, as faster-whisper's alignment does, so that every
 * text position's logits are seen. heads: n_heads (layer, head) pairs.
 * attention: [n_heads, n_start + n_text + 2, n_audio_ctx]; text_probs
 * [n_text]: softmax over the ids below eot of the logits before each text
 * token, at that token. */
sw_status sw_whisper_word_attention(sw_whisper *model, const sw_whisper_audio *audio,
                                    const int32_t *start, int n_start, const int32_t *text,
                                    int n_text, int eot, int no_timestamps, const int *heads,
                                    int n_heads, float *attention, float *text_probs,
                                    sw_error *err);

#endif
