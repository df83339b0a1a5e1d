/* The struct behind sw_segmentation, shared by its weights and forward files,
 * and the architecture's fixed sizes. */
#ifndef SW_SEGMENTATION_INTERNAL_H
#define SW_SEGMENTATION_INTERNAL_H

#include "model_object.h"
#include "ops.h"
#include "segmentation.h"

/* SincNet */
#define SEG_SINC_FILTERS  80
#define SEG_SINC_TAPS     251
#define SEG_SINC_STRIDE   10
#define SEG_CONV_CHANNELS 60
#define SEG_CONV_TAPS     5
#define SEG_POOL          3
/* recurrent and dense layers */
#define SEG_LSTM_LAYERS 4
#define SEG_LSTM_HIDDEN 128
#define SEG_LINEAR      128
/* what PyTorch's InstanceNorm1d and LeakyReLU default to, as in the export */
#define SEG_NORM_EPS    1e-5f
#define SEG_LEAKY_SLOPE 0.01f

struct sw_segmentation {
    sw_model_object obj; /* first: model_object.h */
    sw_tensor wav_norm_w, wav_norm_b;
    sw_tensor conv_w[3], conv_b[3]; /* conv_b[0] stays empty: the sinc filters have no bias */
    sw_tensor norm_w[3], norm_b[3];
    sw_tensor lstm_ih[SEG_LSTM_LAYERS], lstm_hh[SEG_LSTM_LAYERS], lstm_b[SEG_LSTM_LAYERS];
    sw_tensor lin_w[2], lin_b[2];
    sw_tensor cls_w, cls_b;
    /* on the host, for sw_segmentation_run_span: the waveform norm's affine
     * pair and each sinc filter's sum of taps */
    double wav_gamma, wav_beta, sinc_sum[SEG_SINC_FILTERS];
};

#endif
