/* BatchNorm (folded to a scale and a shift) then ReLU over the first c
 * channels of rows that lie `ld` floats apart: CAM++'s read of a dense
 * block's features before each layer, one pass on the CPU where the generic
 * ops took four (a gather of the rows, a product, a sum, the ReLU). */
#ifndef SW_CPU_AFFINE_RELU_H
#define SW_CPU_AFFINE_RELU_H

#include "backend.h"

/* dst [n, c] = relu(src[r * ld + k] * scale[k] + shift[k]) on a CPU backend,
 * with the bits of sw_mul, sw_add and sw_leaky_relu(0) in turn. */
sw_status sw_cpu_affine_relu_rows(sw_backend *be, const float *src, int64_t ld, int64_t n,
                                  int64_t c, const float *scale, const float *shift, float *dst,
                                  sw_error *err);

#endif
