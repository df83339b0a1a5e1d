/* Silero VAD v6 (16 kHz) on any backend: audio in, one speech probability per
 * 512-sample window out, the LSTM state carried across the whole recording.
 *
 * Each window with the 64 samples before it (zeros for the first), reflect-
 * padded by 128 on both sides, goes through a 256-tap STFT (a strided
 * convolution with the export's basis; magnitudes of 129 bins; the first of
 * its 5 frames dropped), four 3-tap convolutions with ReLU (strides 1, 2, 2,
 * 1) down to one frame of 128, then one LSTM of 128 over all windows, ReLU, a
 * linear unit and a sigmoid.
 *
 * Built from the arrays saywho.audio.vad.load_silero reads out of the ONNX export:
 * encoder.feature_extractor.forward_basis_buffer [258, 1, 256],
 * encoder.conv_layers.{0..3}.weight / .bias, lstm.w_ih [1, 512, 128],
 * lstm.w_hh [1, 512, 128], lstm.bias [1, 512] (gates in PyTorch's order),
 * decoder.conv1d.weight [1, 128, 1], decoder.conv1d.bias [1]. One thread at
 * a time per backend. */
#ifndef SW_SILERO_H
#define SW_SILERO_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_SILERO_WINDOW 512

typedef struct sw_silero sw_silero;

sw_status sw_silero_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                           sw_silero **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_silero_destroy(sw_silero *model);

/* The backend was destroyed under the model: destroy frees host memory only. */
void sw_silero_backend_lost(sw_silero *model);

sw_backend *sw_silero_backend(const sw_silero *model);

/* audio [n_samples] (host, a multiple of 512) -> probs [n_samples / 512]
 * (host). The network runs `batch` windows at a time (its memory: one
 * batch's), the LSTM's state carried from batch to batch. `recording` (not
 * 0) is the caller's number for the recording the audio belongs to. resume
 * 0: the audio begins it (zero state, zero context); 1: the audio goes on
 * from the end of the previous call's (its state and its last 64 samples), so
 * a recording fed in pieces gives the probabilities of one call. A resume is
 * refused (SW_ERR_ARG, nothing run) unless the previous call on the model ran
 * the same recording and succeeded: after another recording, or a call that
 * failed part-way (its state half-updated), or on a new model (its state never
 * set), it would go on from the wrong state. A call refused for its arguments
 * changes nothing. */
sw_status sw_silero_run(sw_silero *model, const float *audio, int64_t n_samples, int batch,
                        uint64_t recording, int resume, float *probs, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
