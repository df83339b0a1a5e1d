/* CAM++ (3D-Speaker's D-TDNN with context-aware masking) on any backend:
 * 80-bin log fbank frames in (mean-normalised by the caller), one 192-d
 * speaker embedding per item out.
 *
 * A 2-D convolutional front (FCM: a 3x3 conv, two pairs of residual blocks
 * that halve the frequency axis, a strided 3x3 conv: 32 channels x 10 rows),
 * a TDNN layer of 128 (kernel 5, stride 2 in time), three densely connected
 * blocks of 12, 24 and 16 CAM layers (growth 32, dilation 1, 2, 2) each
 * followed by a halving transition, statistics pooling (mean and unbiased
 * standard deviation over time) and a linear layer with BatchNorm to 192.
 *
 * The model takes named host arrays that the Python reader prepared:
 * BatchNorm already folded into the convolutions that precede it and every
 * convolution's weight laid out as [C_out, K * C_in] (tap-major), so that a
 * convolution here is one gather of rows (an im2col whose out-of-range taps
 * are the zero padding) and one matrix product. docs/campp.md lists the
 * names and shapes. One thread at a time per backend. */
#ifndef SW_CAMPP_H
#define SW_CAMPP_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_CAMPP_FEAT_DIM  80
#define SW_CAMPP_EMBED_DIM 192

typedef struct sw_campp sw_campp;

/* Finds every tensor the network needs among `tensors` and uploads them as
 * float32. A missing or mis-shaped tensor is SW_ERR_MODEL naming it. */
sw_status sw_campp_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                          sw_campp **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_campp_destroy(sw_campp *model);

/* The backend was destroyed under the model: destroy frees host memory only. */
void sw_campp_backend_lost(sw_campp *model);

sw_backend *sw_campp_backend(const sw_campp *model);

/* The fewest fbank frames an item may have (the pooling needs two frames
 * after the stride-2 TDNN layer). */
#define SW_CAMPP_MIN_FRAMES 3

/* features [batch, frames, 80] (host) -> out [batch, 192] (host). Every item
 * has all `frames` frames; items do not influence each other. */
sw_status sw_campp_run(sw_campp *model, const float *features, int batch, int64_t frames,
                       float *out, sw_error *err);

/* features [sum of lengths, 80] (host): item b's lengths[b] frames follow
 * item b - 1's; out [batch, 192] (host). Items may differ in length (each
 * at least SW_CAMPP_MIN_FRAMES) and do not influence each other: this is
 * sw_campp_run on each item alone, in one call with bigger products. */
sw_status sw_campp_run_items(sw_campp *model, const float *features, const int64_t *lengths,
                             int batch, float *out, sw_error *err);

/* The 2-D front's output per frame: 32 channels x 10 frequency rows. */
#define SW_CAMPP_FRONT_DIM 320

/* The 2-D front alone on one sequence: features [frames, 80] (host) -> out
 * [frames, 320] (host), channel c * 10 + row f, what the TDNN layer reads.
 * Its receptive field is 10 frames either side (ten 3-tap layers). */
sw_status sw_campp_front(sw_campp *model, const float *features, int64_t frames, float *out,
                         sw_error *err);

/* sw_campp_run_items from the front's output on: front [sum of lengths, 320]
 * (host), item b's rows after item b - 1's; out [batch, 192] (host). With
 * rows sw_campp_front made of an item's own features this is
 * sw_campp_run_items; rows gathered from a longer sequence's front (the
 * diarizer's shared front) are an approximation of it. */
sw_status sw_campp_run_front_items(sw_campp *model, const float *front, const int64_t *lengths,
                                   int batch, float *out, sw_error *err);

/* 1 when the model's backend makes the features from the audio (a GPU:
 * backend.h's SW_CAP_FBANK) and sw_campp_run_span may be called. */
int sw_campp_features_on_device(const sw_campp *model);

/* Embeddings of sequences of an audio span's fbank frames, the features
 * made on the device (campp_span.c): samples [n_samples] (host, 16 kHz in
 * [-1, 1]) go up once; frames [sum of lengths] (host, int32) name the
 * span's fbank frames each item keeps, in order (frame t reads samples
 * 160 t .. 160 t + 399), and go up once. Each item less its own frames'
 * mean is sw_campp_run_items' item, to float rounding; at most max_frames
 * frames a forward (an item longer than that alone). out [batch, 192]
 * (host). SW_ERR_ARG where sw_campp_features_on_device is 0. on_device:
 * the samples already on the model's backend (an audio span, audio_span.h,
 * that segmentation read too), or NULL to upload them here. */
sw_status sw_campp_run_span(sw_campp *model, const float *samples, int64_t n_samples,
                            const sw_tensor *on_device, const int32_t *frames,
                            const int64_t *lengths, int batch, int64_t max_frames, float *out,
                            sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
