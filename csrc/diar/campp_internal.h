/* The struct behind sw_campp, shared by its weights and forward files, and
 * the architecture's fixed sizes (3D-Speaker's CAMPPlus defaults). */
#ifndef SW_CAMPP_INTERNAL_H
#define SW_CAMPP_INTERNAL_H

#include "model_object.h"
#include "campp.h"
#include "ops.h"
#include "fused_ops.h"
#include "fbank.h"

#define CAMPP_HEAD_CHANNELS 32 /* FCM's m_channels */
#define CAMPP_HEAD_ROWS     10 /* 80 mel bins halved three times */
#define CAMPP_INIT_CHANNELS 128
#define CAMPP_TDNN_TAPS     5
#define CAMPP_GROWTH        32  /* channels each CAM layer adds */
#define CAMPP_BN_CHANNELS   128 /* bn_size 4 x growth */
#define CAMPP_CTX_CHANNELS  64  /* the mask's bottleneck (reduction 2) */
#define CAMPP_SEG_LEN       100 /* frames per segment of the context pooling */
#define CAMPP_BLOCKS        3
#define CAMPP_LAYERS        52 /* 12 + 24 + 16 */
#define CAMPP_OUT_CHANNELS  512
#define CAMPP_CHUNKS        (2 * CAMPP_OUT_CHANNELS / CAMPP_GROWTH) /* per row of a block */
#define CAMPP_RES_BLOCKS    4 /* layer1.0, layer1.1, layer2.0, layer2.1 */

extern const int campp_block_layers[CAMPP_BLOCKS];
extern const int campp_block_dilation[CAMPP_BLOCKS];

/* A convolution as a matrix: y = x_im2col w^T (+ b). b empty when absent. */
typedef struct campp_linear {
    sw_tensor w, b;
    sw_weight_layout layout; /* how the backend's prepare_linear left w */
    sw_tensor u; /* a 3x3 convolution's weight as the backend's conv3x3 reads it, or empty */
} campp_linear;

/* The outputs of a layer, whichever way its weight lies. */
static inline int64_t campp_out(const campp_linear *l)
{
    return l->layout == SW_LAYOUT_IN_OUT ? l->w.shape[1] : l->w.shape[0];
}

/* Inference BatchNorm before a ReLU: x * scale + shift. */
typedef struct campp_affine {
    sw_tensor scale, shift;
} campp_affine;

typedef struct campp_layer {
    campp_affine norm;    /* nonlinear1 over the block's channels so far */
    campp_linear bottle;  /* linear1 with nonlinear2's BatchNorm folded in */
    campp_linear local;   /* the CAM layer's dilated conv, 3 taps */
    campp_linear ctx_in;  /* context -> 64, then ReLU */
    campp_linear ctx_out; /* 64 -> 2 x 32: each mask logit beside a zero (see campp.c) */
    int in_channels, dilation;
} campp_layer;

struct sw_campp {
    sw_model_object obj; /* first: model_object.h */
    campp_linear head_conv1, res[CAMPP_RES_BLOCKS][2], res_short[2], head_conv2;
    campp_linear tdnn;
    campp_layer layers[CAMPP_LAYERS];
    campp_affine transit_norm[CAMPP_BLOCKS];
    campp_linear transit[CAMPP_BLOCKS]; /* the last has out_nonlinear's BatchNorm folded in */
    campp_linear dense;                 /* [192, 1024], [192] with the BatchNorm folded */
    /* Made once per model, freed with the weights: */
    sw_tensor mel_banks; /* [80, 257] Kaldi's filters where the backend makes the features
                          * (SW_CAP_FBANK: campp_span.c); else empty */
    sw_tensor chunk_ids; /* the dense blocks' chunk tables for chunk_rows rows (campp.c) */
    int64_t chunk_rows;
};

/* The whole network on features x [sum of lengths, 80] already on the
 * backend (freed here): item b's lengths[b] frames after item b - 1's. */
sw_status campp_run_device(sw_campp *m, sw_tensor *x, const int64_t *lengths, int batch, float *out,
                           sw_error *err);

/* 3D-Speaker's front end: 80 bins, Kaldi's povey window, the [-1, 1]
 * waveform (embedding_campp.py's FBANK), no mean removal. */
sw_fbank_options campp_fbank_options(void);

/* mel_banks on the backend where it makes features (campp_span.c). */
sw_status campp_load_mel_banks(sw_campp *m, sw_error *err);

#endif
