/* int8 products for compute_type "int8": a weight [n, k] quantized once per
 * output row, activations quantized per row on every call, products summed
 * exactly in int32 and scaled back to float32.
 *
 * Quantization follows CTranslate2's symmetric per-row scheme: scale =
 * 127 / max|row|, q = round-half-even(x * scale), so x ~= q / scale. A row of
 * zeros gets scale 1 (all q 0). */
#ifndef SW_Q8_GEMM_H
#define SW_Q8_GEMM_H

#include <stdint.h>

#include "q8_quantize.h"

/* c[r, j] = dot(qa[r], qw[j]) / (sa[r] * sw[j]) + beta * c[r, j] for r < m,
 * n0 <= j < n1 (qa rows of k bytes, qw rows of k bytes). The integer sum is
 * exact, so every code path gives the same bits. */
void sw_q8_gemm_nt(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                   const int8_t *qw, const float *sw, const int32_t *w_sums, float beta, float *c,
                   int ldc);

/* The portable path, for tests that compare it with the vector one. */
void sw_q8_gemm_nt_scalar(int m, int n0, int n1, int k, const int8_t *qa, const float *sa,
                          const int8_t *qw, const float *sw, float beta, float *c, int ldc);

/* 1 when sw_q8_gemm_nt runs the AVX-512 VNNI kernel on this CPU. */
int sw_q8_has_vnni(void);

#endif
