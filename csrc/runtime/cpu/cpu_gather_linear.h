/* A convolution as CAM++ and the ResNet write it, fused for the CPU: rows
 * gathered by id (an im2col), multiplied by a weight, bias and ReLU added,
 * block by block on one thread each. Through the generic ops each block was
 * four pool jobs (gather, product, bias, ReLU), thousands a forward, each
 * small enough that handing it to the pool cost as much as doing it. */
#ifndef SW_CPU_GATHER_LINEAR_H
#define SW_CPU_GATHER_LINEAR_H

#include "backend.h"

/* y [n_out, C_out] = relu?(cols . w^T + bias) on a CPU backend, where row r of
 * cols is x's rows ids[r * taps .. r * taps + taps - 1] side by side (an id out
 * of range reads zeros), or x's row r itself when ids is NULL (taps 1). x, w,
 * bias and y float32 and contiguous; w [C_out, taps * C_in], or with
 * w_transposed [taps * C_in, C_out]; bias NULL or [C_out]. `block`: the most output rows one thread
 * takes at a time. */
sw_status sw_cpu_gather_linear(const sw_tensor *x, const sw_tensor *ids, int taps,
                               const sw_tensor *w, int w_transposed, const sw_tensor *bias,
                               int relu, int64_t block, sw_tensor *y, sw_error *err);

/* Whether a weight of `out` rows should be kept transposed ([in, out]) for
 * this call on this CPU: the narrow kernel (narrow_gemm.h) then multiplies it
 * without packing. Loaders transpose once, so no call does. */
int sw_cpu_gather_linear_wants_transposed(int64_t out);

#endif
