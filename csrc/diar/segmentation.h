/* pyannote's segmentation-3.0 network on any backend: 10 s of 16 kHz audio in,
 * for each of 589 frames the log-probabilities of 7 powerset classes (no
 * speaker, speakers 1, 2, 3 alone, pairs {1,2}, {1,3}, {2,3}) out.
 *
 * SincNet (instance norm of the waveform, 80 fixed sinc filters of 251 taps
 * every 10 samples, |.|, then three blocks of max pool 3, instance norm,
 * leaky ReLU with a 60-channel conv of 5 taps between them), a 4-layer
 * bidirectional LSTM of 128, two linear layers of 128 with leaky ReLU, a
 * linear classifier and log-softmax.
 *
 * The model is built from named host arrays (docs/segmentation.md lists the
 * names and shapes); the readers that turn pyannote's checkpoint or its ONNX
 * export into them live in Python. One thread at a time per backend. */
#ifndef SW_SEGMENTATION_H
#define SW_SEGMENTATION_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_SEG_SAMPLE_RATE 16000
#define SW_SEG_CLASSES     7

typedef struct sw_segmentation sw_segmentation;

/* Finds every tensor the network needs among `tensors` (others are ignored)
 * and uploads them as float32. A missing or mis-shaped tensor is
 * SW_ERR_MODEL naming it and the shape expected. */
sw_status sw_segmentation_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                                 sw_segmentation **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_segmentation_destroy(sw_segmentation *model);

/* The backend was destroyed under the model: destroy frees host memory only. */
void sw_segmentation_backend_lost(sw_segmentation *model);

sw_backend *sw_segmentation_backend(const sw_segmentation *model);

/* Output frames for `samples` input samples (589 for 160,000); 0 when the
 * input is too short for one frame. */
int64_t sw_segmentation_frames(int64_t samples);

/* waveforms [batch, samples] (host) -> out [batch, frames, 7] (host) of
 * log-probabilities. Each waveform is normalised on its own, so the result
 * of an item does not depend on the others in the batch. */
sw_status sw_segmentation_run(sw_segmentation *model, const float *waveforms, int batch,
                              int64_t samples, float *out, sw_error *err);

/* sw_segmentation_run on the windows span[offsets[i] : offsets[i] + samples]
 * of one span (host; each offset a multiple of 10 samples, each window
 * inside the span): the same up to float rounding, with SincNet's first
 * convolution done once over the span instead of once per window. The
 * waveform norm is affine, so a window's first layer is its stretch of the
 * span's convolution times the window's 1 / std plus its mean's share of
 * each filter's sum; overlapping windows (pyannote's 1 s step over 10 s)
 * shared nine tenths of that work. on_device: the span's samples already on
 * the model's backend (an audio span, audio_span.h, that the speaker
 * embedding reads too), or NULL to upload them here. */
sw_status sw_segmentation_run_span(sw_segmentation *model, const float *span, int64_t span_samples,
                                   const sw_tensor *on_device, const int64_t *offsets, int batch,
                                   int64_t samples, float *out, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
