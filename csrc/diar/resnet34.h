/* WeSpeaker's ResNet34 (the speaker encoder of pyannote 3.1 and community-1)
 * on any backend: 80-bin fbank frames in (mean-normalised by the caller), one
 * 256-d embedding per item and mask out.
 *
 * The fbank is an image of 80 frequency rows by T frames with one channel; a
 * 3x3 convolution to 32 channels, then BasicBlocks [3, 4, 6, 3] of 32, 64,
 * 128 and 256 channels, the first block of the last three stages halving both
 * axes (a 1x1 convolution on its shortcut); ReLU after every block. The last
 * stage's activations [10 rows, T' frames, 256 channels] are pooled over time
 * (mean and unbiased standard deviation of every channel and row, weighted by
 * a mask resampled onto the T' frames) and a linear layer maps the 5120
 * statistics to the embedding.
 *
 * The model takes named host arrays that the Python reader prepared
 * (embedding_resnet.fold_state_dict): BatchNorm folded into every
 * convolution, `conv1` [32, 1, 3, 3] and `conv1.b` [32], `layerS.I.conv1`,
 * `.conv2` (and `.shortcut` [C_out, C_in, 1, 1] where a block changes shape)
 * with their `.b` biases, `seg_1.weight` [256, 5120] and `seg_1.bias`. One
 * thread at a time per backend. */
#ifndef SW_RESNET34_H
#define SW_RESNET34_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_RESNET34_FEAT_DIM  80
#define SW_RESNET34_EMBED_DIM 256

typedef struct sw_resnet34 sw_resnet34;

/* Finds every tensor the network needs among `tensors`, rearranges the 3x3
 * kernels for the forward and uploads everything once, as float32. A missing
 * or mis-shaped tensor is SW_ERR_MODEL naming it and the shape expected. */
sw_status sw_resnet34_create(sw_backend *backend, const sw_named_tensor *tensors, int n_tensors,
                             sw_resnet34 **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_resnet34_destroy(sw_resnet34 *model);

/* The backend was destroyed under the model: destroy frees host memory only. */
void sw_resnet34_backend_lost(sw_resnet34 *model);

sw_backend *sw_resnet34_backend(const sw_resnet34 *model);

/* features [batch, frames, 80] (host) -> out [batch, n_masks, 256] (host).
 * masks [batch, n_masks, mask_frames] (host) weigh the pooling: each is
 * resampled onto the last stage's frames by nearest neighbour (as torch's
 * interpolate "nearest"); a mask that keeps no frame gives NaN. masks NULL:
 * n_masks must be 1 and every frame weighs 1. The network runs once per item
 * whatever n_masks is; items do not influence each other. */
sw_status sw_resnet34_run(sw_resnet34 *model, const float *features, int batch, int64_t frames,
                          const float *masks, int n_masks, int64_t mask_frames, float *out,
                          sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
