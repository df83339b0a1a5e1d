/* The GE2E speaker encoder (Wan et al. 2018; resemblyzer's pretrained.pt) on
 * any backend: 40-band mel power frames in, one unit-length 256-d embedding
 * per partial utterance out. A 3-layer LSTM of 256, the last frame's hidden
 * state, a linear layer of 256, ReLU and L2 normalisation.
 *
 * Built from resemblyzer's state-dict names: lstm.weight_ih_l{0,1,2},
 * lstm.weight_hh_l*, lstm.bias_ih_l*, lstm.bias_hh_l*, linear.weight,
 * linear.bias. One thread at a time per backend. */
#ifndef SW_GE2E_H
#define SW_GE2E_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_GE2E_MELS      40
#define SW_GE2E_EMBED_DIM 256
#define SW_GE2E_PARTIAL   160 /* frames a partial utterance, as the encoder was trained */

typedef struct sw_ge2e sw_ge2e;

/* Finds the tensors among `tensors` and uploads them once (the two LSTM
 * biases summed). A missing or mis-shaped tensor is SW_ERR_MODEL naming it. */
sw_status sw_ge2e_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                         sw_ge2e **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_ge2e_destroy(sw_ge2e *model);

/* The backend was destroyed under the model: destroy frees host memory only. */
void sw_ge2e_backend_lost(sw_ge2e *model);

sw_backend *sw_ge2e_backend(const sw_ge2e *model);

/* mels [n, frames, 40] (host) -> out [n, 256] (host), unit length (a zero
 * vector stays zero). Item i has lengths[i] frames (1 .. frames; the rest is
 * padding, which the causal LSTM reads after the state that counts), or all
 * `frames` when lengths is NULL. */
sw_status sw_ge2e_run(sw_ge2e *model, const float *mels, int n, int64_t frames,
                      const int64_t *lengths, float *out, sw_error *err);

/* sw_ge2e_run, then item i's embedding added into group owners[i] (0 ..
 * groups - 1) and each group's sum L2-normalised (a group without items
 * stays zero): out [groups, 256], resemblyzer's mean of partials, summed on
 * the device so that only the groups' embeddings come down. The sums are
 * float32 in the device's order, so they differ from the host's float64
 * mean in the last bits. */
sw_status sw_ge2e_run_pooled(sw_ge2e *model, const float *mels, int n, int64_t frames,
                             const int64_t *lengths, const int32_t *owners, int groups, float *out,
                             sw_error *err);

/* 1 where the model's backend makes the mels itself (backend.h's
 * SW_CAP_MEL_POWER: the GPU) and sw_ge2e_run_span may be called. */
int sw_ge2e_mels_on_device(const sw_ge2e *model);

/* A span of audio and the partials to embed from its mel frames. */
typedef struct sw_ge2e_span {
    const float *samples;  /* the span, 16 kHz mono; mel frame f is centred on sample 160 f */
    int64_t n_samples;     /* its n_samples / 160 frames are the mel frames */
    const int32_t *frames; /* n_frames ids of the span's mel frames: the sequences' kept frames */
    int64_t n_frames;
    const int64_t *starts;  /* partial i is frames[starts[i] .. starts[i] + lengths[i] - 1], */
    const int64_t *lengths; /* 1 to SW_GE2E_PARTIAL of them, */
    const int32_t *owners;  /* of sequence owners[i]: rising from 0 by one at most */
    const float *gains;     /* [groups] each sequence's mels are multiplied by (volume) */
    int n, groups;
    int max_rows; /* partials a forward: whole sequences, one longer than this alone */
    const sw_tensor *on_device; /* the samples already on the model's backend (an audio
                                 * span, audio_span.h), or NULL to upload them here */
} sw_ge2e_span;

/* sw_ge2e_run_pooled on the mels of s's frames, made on the device: the
 * span goes up once, its mel power frames are taken there (audio/mel.c's,
 * to float32 rounding) and each partial's frames gathered times its
 * sequence's gain. out [groups, 256]: each sequence's partials summed and
 * normalised, as sw_ge2e_run_pooled. */
sw_status sw_ge2e_run_span(sw_ge2e *model, const sw_ge2e_span *s, float *out, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
