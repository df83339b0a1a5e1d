/* Products of a few rows against a wide weight: the decoder's case (one row
 * per beam against a [n, k] projection or the [vocab, d] output layer).
 * sgemm would copy ("pack") the whole weight on every call, which costs more
 * than the arithmetic when there are only a handful of rows; this kernel
 * streams each weight row once from memory and reuses it from L1 for every
 * input row. */
#ifndef SW_SMALL_GEMM_H
#define SW_SMALL_GEMM_H

/* The kernel is built for x86-64-v4, v3 and the baseline (cpu_dispatch.h
 * picks one). The v4 and v3 builds fuse each multiply-add (small_gemm.c is
 * compiled with -ffp-contract=fast) lane for lane in the same order, so they
 * give the same bits; the baseline does not fuse and may differ in the last
 * bit. One process always runs one level, so every row still gets the same
 * bits whatever m is. */

/* Rows below this go through sw_small_gemm_nt: beams, and batched decoding
 * (8 windows x 5 beams). Each row's sums are the same whatever m is, so a
 * window decoded in a batch gets the logits it gets alone. */
#define SW_SMALL_GEMM_MAX_ROWS 64

/* c[r, j] = alpha * dot(a[r, :k], w[j, :k]) + beta * c[r, j] for r < m
 * (m <= SW_SMALL_GEMM_MAX_ROWS) and n0 <= j < n1. The sum order is fixed (16 interleaved partial
 * sums), so with or without FMA the result is the same whatever vector width the CPU has. */
void sw_small_gemm_nt(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                      const float *w, int ldw, float beta, float *c, int ldc);

/* The same product with w [n, k] in float16 (the weights as a CTranslate2
 * file holds them, read where they lie): blocks of `rows` weight rows are
 * widened into scratch (rows * k floats, from sw_small_gemm_f16_rows) and go
 * through sw_small_gemm_nt, so every output has the bits it has with the
 * weights widened beforehand, while memory delivers half the bytes. */
void sw_small_gemm_nt_f16(int m, int n0, int n1, int k, float alpha, const float *a, int lda,
                          const void *w, int ldw, float beta, float *c, int ldc, float *scratch,
                          int rows);

/* Weight rows per widened block for a row length of k: about 128 KB of
 * floats (the block stays in L2 while the tiles read it), a multiple of 12
 * (the tiles' widths, 3 and 4) where k allows, at least 1. */
int sw_small_gemm_f16_rows(int k);

/* dot(x, y) over k floats with the same fixed sum order. */
float sw_dot(const float *x, const float *y, int k);

#endif
