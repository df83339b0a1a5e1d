/* SincNet's first layer after its convolution, for windows cut from one
 * span's convolution (segmentation.c's run_span): each window's stretch of
 * the span scaled and shifted (its input norm, which is affine), made a
 * magnitude and max-pooled, in one pass on the CPU. The generic ops wrote
 * every window's stretch out whole first (82 MB for 16 windows of 10 s),
 * only for the pooling to read it back and keep a third. */
#ifndef SW_CPU_SPAN_POOL_H
#define SW_CPU_SPAN_POOL_H

#include "backend.h"

/* y [B, T_out, C] with y[b, t, c] = max over k < pool of
 * |span[first[b] + t * pool + k, c] * scale[b] + shift[b * C + c]|, span
 * [rows, C]; each window's T_out * pool rows must lie in the span. The bits
 * of sw_scale, sw_add, sw_abs and sw_max_pool1d(pool, pool) in turn (a NaN
 * in a window wins, as there). */
sw_status sw_cpu_span_abs_pool(const sw_tensor *span, const int64_t *first, const float *scale,
                               const float *shift, int pool, sw_tensor *y, sw_error *err);

#endif
