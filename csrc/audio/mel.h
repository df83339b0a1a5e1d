/* Whisper's log-mel spectrogram: n_fft 400, hop 160, periodic Hann window,
 * centred frames with reflect padding, the last frame dropped, Slaney mel
 * filters, log10 clamped at 1e-10, floor at (max - 8), then (x + 4) / 4. */
#ifndef SW_MEL_H
#define SW_MEL_H

#include <stddef.h>

#include "status.h"
#include "threads.h"

#define SW_WHISPER_N_FFT       400
#define SW_WHISPER_HOP         160
#define SW_WHISPER_SAMPLE_RATE 16000
#define SW_WHISPER_N_BINS      (SW_WHISPER_N_FFT / 2 + 1)

/* librosa's Slaney-style mel filterbank (htk=False, norm="slaney"), which is
 * what Whisper ships as mel_filters.npz: n_mels x (n_fft / 2 + 1), row-major,
 * malloc'ed. */
sw_status sw_mel_filters(int sample_rate, int n_fft, int n_mels, float **out, sw_error *err);

/* Frames that sw_log_mel returns for n samples plus `padding` zeros. */
size_t sw_log_mel_frames(size_t n_samples, size_t padding);

/* out: n_mels x n_frames, row-major, malloc'ed. n_mels is 80 or 128.
 * tp may be NULL (one thread). */
sw_status sw_log_mel(const float *samples, size_t n_samples, size_t padding, int n_mels,
                     sw_threadpool *tp, float **out, size_t *n_frames, sw_error *err);

/* The mel power spectrogram the GE2E speaker encoder reads (librosa's
 * melspectrogram as resemblyzer calls it: the same STFT and Slaney filters,
 * power, no log). out: n_frames x n_mels, frame-major, malloc'ed; frame t
 * is centred on sample t * 160 and the last frame is dropped as above. */
sw_status sw_mel_power(const float *samples, size_t n_samples, int n_mels, sw_threadpool *tp,
                       float **out, size_t *n_frames, sw_error *err);

#endif
