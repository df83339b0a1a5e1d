/* A span of audio on the device, uploaded once and read by every network
 * that takes a diarization batch's span there: segmentation's SincNet
 * (sw_segmentation_run_span), CAM++'s fbank (sw_campp_run_span) and GE2E's
 * mels (sw_ge2e_run_span). Each of those otherwise uploads the span itself:
 * with two networks the same samples went up twice a batch. It is a model
 * object (model_object.h) so that the Python Runtime's life cycle holds for
 * it: made on a backend, freed by close(), forgotten when the backend goes. */
#ifndef SW_AUDIO_SPAN_H
#define SW_AUDIO_SPAN_H

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_audio_span sw_audio_span;

/* Uploads the tensor "samples" (float32, one dimension, at least one
 * sample, every one finite) of `tensors` to be. */
sw_status sw_audio_span_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                               sw_audio_span **out, sw_error *err);
void sw_audio_span_destroy(sw_audio_span *span);
void sw_audio_span_backend_lost(sw_audio_span *span);
sw_backend *sw_audio_span_backend(const sw_audio_span *span);

/* The samples on the device, [n] float32; NULL once the backend is lost. */
const sw_tensor *sw_audio_span_samples(const sw_audio_span *span);

/* Whether t holds n float32 samples, one dimension, on be: what a network
 * checks of the span on the device it is given before reading it. */
int sw_span_on(const sw_tensor *t, const sw_backend *be, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
