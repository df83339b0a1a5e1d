/* Kaldi-style log mel filterbank, as torchaudio.compliance.kaldi.fbank
 * computes it for WeSpeaker and pyannote's speaker embeddings: 25 ms frames
 * every 10 ms without padding (snip_edges), DC removal, pre-emphasis 0.97,
 * a symmetric Hamming window (or Kaldi's "povey" window, a Hann window
 * raised to 0.85), a 512-point power spectrum, 80 triangular
 * filters on Kaldi's mel scale (1127 ln(1 + f / 700)) from 20 Hz to Nyquist,
 * and the natural log floored at float32 epsilon. */
#ifndef SW_FBANK_H
#define SW_FBANK_H

#include <stddef.h>

#include "status.h"
#include "threads.h"

typedef struct sw_fbank_options {
    int sample_rate;       /* 16000 */
    int num_mel_bins;      /* 80 */
    float frame_length_ms; /* 25 */
    float frame_shift_ms;  /* 10 */
    float low_freq;        /* 20 Hz */
    float high_freq;       /* <= 0: that much below Nyquist (0 = Nyquist) */
    float preemphasis;     /* 0.97 */
    int remove_dc_offset;  /* 1 */
    float input_scale;     /* pyannote multiplies by 32768 to mimic int16 input */
    int subtract_mean;     /* WeSpeaker's CMN: subtract each bin's mean over frames */
    int povey_window;      /* Kaldi's default window (3D-Speaker's CAM++) instead of Hamming */
} sw_fbank_options;

/* torchaudio's defaults with WeSpeaker's choices: 16 kHz, 80 bins, scale
 * 32768, mean subtraction on. */
sw_fbank_options sw_fbank_default_options(void);

/* Frames for n samples: 1 + (n - window) / shift, or 0 when n < window. */
size_t sw_fbank_frames(const sw_fbank_options *opt, size_t n_samples);

/* out: n_frames x num_mel_bins, row-major, malloc'ed (NULL when 0 frames). */
sw_status sw_fbank(const float *samples, size_t n_samples, const sw_fbank_options *opt,
                   sw_threadpool *tp, float **out, size_t *n_frames, sw_error *err);

/* The triangular filters: num_mel_bins x (padded_window / 2 + 1), malloc'ed. */
sw_status sw_kaldi_mel_banks(const sw_fbank_options *opt, float **out, int *n_fft_bins,
                             sw_error *err);

#endif
