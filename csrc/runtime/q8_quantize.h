/* int8 quantization as compute_type "int8" defines it, for every backend:
 * CTranslate2's symmetric per-row scheme, scale = 127 / max|row|, q =
 * round-half-even(x * scale), so x ~= q / scale; a row of zeros gets scale 1
 * (all q 0). The CPU's products quantize their activations with it
 * (q8_gemm.h), and weights are quantized with it once at load (the backend's
 * prepare_q8, or fused_ops.c's host path for a backend without one). */
#ifndef SW_Q8_QUANTIZE_H
#define SW_Q8_QUANTIZE_H

#include <stddef.h>
#include <stdint.h>

#include "tensor.h"

/* q[r, :k] and scale[r] for the m rows of x (row stride ldx floats). */
void sw_q8_quantize_rows(const float *x, int m, int k, int ldx, int8_t *q, float *scale);

/* Sum of each of the n quantized rows: the VNNI kernel multiplies unsigned
 * bytes (q + 128) and takes 128 * row_sum back off. */
void sw_q8_row_sums(const int8_t *q, int n, int k, int32_t *sums);

/* Rows r0 .. r1 - 1 of a host matrix src [rows, cols] of dtype (f32, f16 or
 * bf16), widened one row at a time into `row` (cols floats of scratch, so
 * the host never holds a float32 copy): their int8 rows into q (row r0 at
 * q), their scales into scale[r0 ..] and row sums into sums[r0 ..]. */
void sw_q8_quantize_matrix_rows(const void *src, sw_dtype dtype, int64_t cols, size_t r0, size_t r1,
                                float *row, int8_t *q, float *scale, int32_t *sums);

#endif
