/* Products with few outputs (a multiple of 16: CAM++'s 32-channel
 * convolutions and 128-wide bottlenecks, the LSTM's recurrence) over many
 * rows, without sgemm's packing: the weight, transposed once to [k, n], is
 * read 32 (or 16) columns at a time from L1 while each tile of rows keeps
 * its sums in registers. On the shapes of CAM++ (256 rows, 32 outputs, 288
 * or 384 inputs) one core ran it 1.4x faster than OpenBLAS's sgemm, packing
 * included. Each output is one fused multiply-add per k, in k order, from
 * zero or from y's value: the same bits at AVX2 and AVX-512 whatever the
 * rows. */
#ifndef SW_NARROW_GEMM_H
#define SW_NARROW_GEMM_H

#include <stdint.h>

/* Whether this CPU (at the level cpu_dispatch picked) has the kernel for
 * n outputs: AVX2 with FMA or AVX-512, n a multiple of 16. */
int sw_narrow_gemm_ok(int64_t n);

/* y[r, j] (+)= sum_k a[r, k] wt[k, j] for r < m, j < n, where row r of a is
 * `taps` pieces of c_in floats, piece t where rows[r * taps + t] points (a
 * convolution's taps read in place, no im2col; taps 1 for a plain product).
 * wt [taps * c_in, n] contiguous, y rows ldy apart; with `accumulate` the
 * sums start at y's values. Only when sw_narrow_gemm_ok(n). */
void sw_narrow_gemm_rows(int64_t m, int64_t n, int taps, int64_t c_in, const float *const *rows,
                         const float *wt, float *y, int64_t ldy, int accumulate);

#endif
