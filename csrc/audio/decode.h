/* Audio input: any file FFmpeg reads, or interleaved float frames, becomes
 * mono float32 at a chosen rate. Channels are averaged and the rate is
 * changed with libswresample. See docs/audio.md for the error policy. */
#ifndef SW_AUDIO_DECODE_H
#define SW_AUDIO_DECODE_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Accepted output (and, for arrays, input) sample rates in Hz. */
#define SW_AUDIO_MIN_RATE 1000
#define SW_AUDIO_MAX_RATE 384000
/* Most channels an input may have (libswresample's limit). */
#define SW_AUDIO_MAX_CHANNELS 64
/* Longest output: 2^30 samples (4 GiB of float32, 18.6 hours at 16 kHz). */
#define SW_AUDIO_MAX_SAMPLES ((size_t)1 << 30)

/* Decodes the best audio stream of `path` to mono float32 at `sample_rate`.
 * On SW_OK, *out is a malloc'ed buffer of *n_out > 0 samples that the caller
 * frees with free(). On failure *out is NULL, *n_out is 0 and err says why,
 * without the path (the caller adds it): SW_ERR_IO when the file cannot be
 * opened or read, SW_ERR_AUDIO when it is empty, not audio, has no audio
 * stream, is corrupt or decodes to no samples, SW_ERR_ARG for a sample rate
 * out of [SW_AUDIO_MIN_RATE, SW_AUDIO_MAX_RATE], SW_ERR_NOMEM.
 * Thread safe; FFmpeg's own log output is silenced process-wide. */
sw_status sw_audio_decode_file(const char *path, int sample_rate, float **out, size_t *n_out,
                               sw_error *err);

/* sw_audio_decode_file, except that a recording longer than `spill_after`
 * samples (0: never) is written to the file descriptor `spill_fd` instead,
 * as native float32 from the descriptor's position: then *out is NULL and
 * *n_out counts the samples written. A shorter one comes back in *out as
 * from sw_audio_decode_file, and nothing is written. Memory stays bounded by
 * spill_after samples plus a piece of a few MiB whatever the length.
 * SW_ERR_IO when the descriptor cannot be written; on any failure what was
 * written is the caller's to discard. */
sw_status sw_audio_decode_file_spill(const char *path, int sample_rate, int spill_fd,
                                     size_t spill_after, float **out, size_t *n_out, sw_error *err);

/* Turns `frames` interleaved frames of `channels` float32 samples at
 * `in_rate` into mono float32 at `out_rate` (a malloc'ed *out of *n_out
 * samples). SW_ERR_ARG for a NULL pointer, channels out of
 * [1, SW_AUDIO_MAX_CHANNELS] or a rate out of range; SW_ERR_AUDIO when
 * frames is 0 or a sample is not finite. */
sw_status sw_audio_resample(const float *in, size_t frames, int channels, int in_rate, int out_rate,
                            float **out, size_t *n_out, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
