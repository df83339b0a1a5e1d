/* The CPU's layout for int8 weights (dtype SW_I8_PACKED): the kernels of
 * q8_gemm.h without the horizontal sums.
 *
 * Row-major int8 weights make each output a dot product of two rows, which
 * a vector unit can only finish by adding its lanes together: on AVX-512
 * one reduction per output, more work than the products themselves when a
 * few rows (beams) meet the 51,864 rows of an output layer. Here the weight
 * rows go in blocks of 16, interleaved four bytes at a time:
 *
 *   block b, group g (bytes 4g..4g+3 of each row): 64 bytes at
 *   b * 16 * k + g * 64, row 16b + c's four bytes at offset 4c
 *
 * so one 64-byte load holds four steps of 16 outputs: VNNI's vpdpbusd
 * multiplies it by the four activation bytes broadcast to every lane and adds
 * into 16 int32 sums, one per output, never reduced across lanes. Rows past
 * the last whole block (n % 16 of them) stay row-major where they are:
 * row j at byte j * k in either layout. The layout needs k % 4 == 0
 * (sw_q8_packable); the sums are exact, so every kernel gives the bits of
 * sw_q8_gemm_nt_scalar on the same rows. */
#ifndef SW_Q8_PACKED_H
#define SW_Q8_PACKED_H

#include <stdint.h>

#include "q8_pack_layout.h"

/* sw_q8_gemm_nt with qw in the packed layout: c[r, j] for r < m and
 * n0 <= j < n1, where n0 is a multiple of 16 and n = the weight's rows
 * (n1 <= n). */
void sw_q8_gemm_nt_packed(int m, int n0, int n1, int n, int k, const int8_t *qa, const float *sa,
                          const int8_t *qw, const float *sw, const int32_t *w_sums, float beta,
                          float *c, int ldc);

#endif
