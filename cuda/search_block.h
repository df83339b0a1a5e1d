/* The search step's block-wide reductions (search_step.cu, search_draw.h):
 * one block of SEARCH_THREADS threads a row, every thread gets the result.
 * Included by search_step.cu only, so static device functions are fine. */
#ifndef SW_CUDA_SEARCH_BLOCK_H
#define SW_CUDA_SEARCH_BLOCK_H

#include <stdint.h>

#include "cuda_internal.h"

#define SEARCH_THREADS 128

/* Block-wide maximum and double sum over SEARCH_THREADS values; every thread
 * gets the result. `sh` is SEARCH_THREADS entries of shared memory. */
static __device__ float block_max_f(float v, float *sh)
{
    int t = threadIdx.x;
    __syncthreads(); /* an earlier reduction may still read sh */
    sh[t] = v;
    __syncthreads();
    for (int s = SEARCH_THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] = sh[t + s] > sh[t] ? sh[t + s] : sh[t];
        __syncthreads();
    }
    return sh[0];
}

static __device__ double block_sum_d(double v, double *sh)
{
    int t = threadIdx.x;
    __syncthreads();
    sh[t] = v;
    __syncthreads();
    for (int s = SEARCH_THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            sh[t] += sh[t + s];
        __syncthreads();
    }
    return sh[0];
}

/* The largest of y[from .. to), over the block. */
static __device__ float row_max(const float *y, int64_t from, int64_t to, float *sh)
{
    float m = -INFINITY;
    for (int64_t j = from + threadIdx.x; j < to; j += SEARCH_THREADS)
        m = y[j] > m ? y[j] : m;
    return block_max_f(m, sh);
}

#endif
