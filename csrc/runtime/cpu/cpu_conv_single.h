/* A 3x3 convolution (stride 1, zero padding 1) of single-channel images into
 * many channels, directly, for the CPU: CAM++'s first layer, 80 mel rows by
 * the frames into 32 channels. Through the generic gather it took an id per
 * tap of every output (47 MB of them for 16,000 frames, built, copied and
 * read back on every call) to multiply nine floats. */
#ifndef SW_CPU_CONV_SINGLE_H
#define SW_CPU_CONV_SINGLE_H

#include "backend.h"

/* y = act(conv3x3(x) + bias) for `batch` images of h rows, image b being
 * off[b + 1] - off[b] columns wide, its values from row h * off[b] of x
 * ([h * off[batch], 1]), row-major; y [h * off[batch], C] alike. w [9, C]
 * (tap (row, column), then output channel), C a multiple of 8; bias [C] or
 * NULL; act a ReLU when relu. Float32, contiguous, on a CPU backend. */
sw_status sw_cpu_conv3x3_single(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                                const float *w, const float *bias, int relu, sw_tensor *y,
                                sw_error *err);

#endif
