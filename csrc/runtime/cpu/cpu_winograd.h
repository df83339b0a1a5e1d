/* 3x3 convolutions (stride 1, zero padding 1) on channels-last images by
 * Winograd's minimal filtering F(2x2, 3x3), for the CPU.
 *
 * Each 2x2 block of outputs is computed from the 4x4 block of inputs around
 * it: the inputs and the weights are carried into a 16-point transform space,
 * where the convolution becomes 16 independent products of (tiles x C_in) by
 * (C_in x C_out), and the 16 results are carried back. That is 16 multiplies
 * per weight and 2x2 outputs where the direct form needs 36: 2.25x fewer.
 * The transforms only add and halve, so the sums differ from the direct
 * form's by rounding alone (CAM++'s embeddings moved by ~1e-6; docs/campp.md).
 *
 * CAM++'s 2-D front (FCM) spends most of its time in six such convolutions
 * of 32 channels over (frequency rows, frames). */
#ifndef SW_CPU_WINOGRAD_H
#define SW_CPU_WINOGRAD_H

#include "backend.h"

/* Floats of a transformed weight: 16 x C_in x C_out. */
#define SW_WINOGRAD_POINTS 16
/* The strided form's: 4 points along the columns, each over the 3 kernel
 * rows side by side, so 4 x 3 x C_in x C_out floats. */
#define SW_WINOGRAD_STRIDED_POINTS 4
#define SW_WINOGRAD_STRIDED_ROWS   (3 * SW_WINOGRAD_STRIDED_POINTS)

/* u [16, C_in, C_out] from a 3x3 weight laid out [3, 3, C_in, C_out] (tap
 * (row, column) then input channel: the narrow kernel's transposed layout). */
void sw_winograd_weights(const float *w, int64_t c_in, int64_t c_out, float *u);

/* Whether sw_cpu_winograd3x3 takes these channel counts (multiples of 8). */
int sw_winograd_ok(int64_t c_in, int64_t c_out);

/* y = act(conv3x3(x) + bias + add) for `batch` images of h rows, image b
 * being off[b + 1] - off[b] columns wide, its rows of C_in floats from row
 * h * off[b] of x ([h * off[batch], C_in]), row-major (row, column); y and
 * add [h * off[batch], C_out] alike. u from sw_winograd_weights; bias [C_out]
 * or NULL; add NULL or y's shape (a residual); act a ReLU when relu, else
 * none. All float32, contiguous, on a CPU backend. */
sw_status sw_cpu_winograd3x3(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                             const sw_tensor *u, const sw_tensor *bias, const sw_tensor *add,
                             int relu, sw_tensor *y, sw_error *err);

/* The strided form: stride 2 along rows (zero padding 1 all round), F(2, 3)
 * along columns only: 12 multiplies for two outputs where 18 were (1.5x
 * fewer). u [SW_WINOGRAD_STRIDED_ROWS x C_in, C_out] from
 * sw_winograd_columns_weights; y and add [(h - 1) / 2 + 1 rows per column,
 * C_out]; the rest as sw_cpu_winograd3x3. */
void sw_winograd_columns_weights(const float *w, int64_t c_in, int64_t c_out, float *u);
sw_status sw_cpu_winograd3x3_rows2(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                                   const sw_tensor *u, const sw_tensor *bias, const sw_tensor *add,
                                   int relu, sw_tensor *y, sw_error *err);

#endif
