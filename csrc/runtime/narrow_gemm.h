/* Products with few outputs (a multiple of 16: CAM++'s 32-channel
 * convolutions, its 128-wide bottlenecks) over many rows, without sgemm's
 * packing: the weight, transposed once to [k, n], is read 32 (or 16)
 * columns at a time from L1 while each tile of rows keeps its sums in
 * registers. On the shapes of CAM++ (256 rows, 32 outputs, 288 or 384
 * inputs) one core ran it 1.4x faster than OpenBLAS's sgemm, packing
 * included. Each output is one fused multiply-add per k, in k order. */
#ifndef SW_NARROW_GEMM_H
#define SW_NARROW_GEMM_H

#include <stdint.h>

/* Whether this CPU (at the level cpu_dispatch picked) has the kernel for
 * n outputs: AVX2 with FMA or AVX-512, n a multiple of 16. */
int sw_narrow_gemm_ok(int64_t n);

/* y[r, j] = sum_k a[r, k] wt[k, j] for r < m, j < n; a [m, k] with rows lda
 * apart, wt [k, n] contiguous, y rows ldy apart. Only when
 * sw_narrow_gemm_ok(n). */
void sw_narrow_gemm(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *wt,
                    float *y, int64_t ldy);

/* The same with row r of a made of `taps` pieces of c_in floats, piece t
 * where rows[r * taps + t] points (a convolution's taps, read in place: no
 * im2col is built). The same sums in the same order as sw_narrow_gemm on the
 * gathered rows. */
void sw_narrow_gemm_rows(int64_t m, int64_t n, int taps, int64_t c_in, const float *const *rows,
                         const float *wt, float *y, int64_t ldy);

#endif
