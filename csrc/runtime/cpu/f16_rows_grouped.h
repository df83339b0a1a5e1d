/* A few input rows against float16 weights, eight weight rows at a time:
 * small_gemm.c's float16 path for the decoder's commonest calls (alpha 1,
 * beta 0 or 1), with the eight outputs' final reductions done together.
 * The same bits as that path: each output's sixteen lane sums are made the
 * same way, and the transposed tree adds the same pairs in the same order.
 * Why: a five-beam step against tiny.en's float16 weights is bound by its
 * multiply-adds, and the one reduction per output plus its scalar store cost
 * a tenth of each weight row's time at AVX2 (a third at AVX-512). */
#ifndef SW_F16_ROWS_GROUPED_H
#define SW_F16_ROWS_GROUPED_H

#include <stdint.h>

/* Input rows the grouped path takes at most. */
#define SW_F16_GROUPED_MAX_ROWS 8

/* Whether the grouped path runs here: x86-64-v3 or v4, k a multiple of 16,
 * 1 <= m <= SW_F16_GROUPED_MAX_ROWS, alpha 1 and beta 0 or 1. */
int sw_f16_rows_grouped_ok(int m, int k, float alpha, float beta);

/* c[r, j] = dot(a[r, :k], w[j, :k]) (+ c[r, j] when beta is 1) for r < m and
 * j from n0 in whole groups of eight below n1; returns the first j it did not
 * do (the caller's path takes the rest). Only when sw_f16_rows_grouped_ok. */
int sw_f16_rows_grouped(int m, int n0, int n1, int k, const float *a, int lda, const uint16_t *w,
                        int ldw, float beta, float *c, int ldc);

#endif
