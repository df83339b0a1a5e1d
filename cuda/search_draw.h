/* Random sampling's draw inside the search step (backend.h search_step with
 * a temperature, ABI 15): whisper_sampling.c's `draw` over the whole
 * vocabulary, so that the temperature fallback's steps stay in the decoder
 * step's graph and only the chosen token and its score come down.
 *
 * The same token as the CPU for the same uniform: the probabilities are
 * sw_softmax_row's (a float32 maximum, expf, a double sum rounded once, one
 * float32 reciprocal), and the cumulative sum is of integer units
 * (SW_DRAW_UNITS), which any order adds exactly, so one thread per
 * contiguous chunk, a prefix over the chunks and a scan of the one chunk the
 * uniform lands in give the CPU loop's answer. What can differ on a GPU is
 * the softmax itself: its double sum in another order (rounded to float32,
 * nearly always the same) and CUDA's expf (within 2 ulp of libm's); a draw
 * then differs only if the uniform lands within those roundings of a
 * boundary between two tokens. On the emulator expf is libm's. */
#ifndef SW_CUDA_SEARCH_DRAW_H
#define SW_CUDA_SEARCH_DRAW_H

#include <math.h>
#include <stdint.h>

#include "backend.h"
#include "cuda_internal.h"
#include "search_block.h"

/* Token j's score over the temperature, as the CPU stores it before its
 * softmax; __fmul_rn so that nvcc fuses it into nothing that follows. */
static __device__ float draw_scaled(const float *y, int64_t j, float c, int log_softmax,
                                    float temperature, float inv)
{
    float v = log_softmax ? y[j] + c : y[j];
    return temperature != 1.0f ? __fmul_rn(v, inv) : v;
}

/* Token j's probability in units: floor(p * SW_DRAW_UNITS), exact. */
static __device__ unsigned long long draw_units(float scaled, float mx, float inv_sum)
{
    float p = __fmul_rn(expf(scaled - mx), inv_sum);
    return (unsigned long long)floor((double)p * SW_DRAW_UNITS);
}

/* Row y (masked) of n tokens, c its log-softmax constant (used when
 * log_softmax): the drawn token, left in *picked for every thread.
 * units: SEARCH_THREADS + 1 entries of shared memory. */
static __device__ int32_t draw_row(const float *y, int64_t n, float c, int log_softmax,
                                   float temperature, const sw_search_row *row, float *shf,
                                   double *shd, unsigned long long *units, int32_t *picked)
{
    int t = threadIdx.x;
    float inv = 1.0f / temperature;
    float mx = -INFINITY;
    for (int64_t j = t; j < n; j += SEARCH_THREADS) {
        float s = draw_scaled(y, j, c, log_softmax, temperature, inv);
        mx = s > mx ? s : mx;
    }
    mx = block_max_f(mx, shf);
    double sum = 0.0;
    for (int64_t j = t; j < n; j += SEARCH_THREADS)
        sum += (double)expf(draw_scaled(y, j, c, log_softmax, temperature, inv) - mx);
    sum = block_sum_d(sum, shd);
    float inv_sum = 1.0f / (float)sum;

    /* each thread's contiguous chunk, so that the running sum's order is
     * the tokens' */
    int64_t chunk = (n + SEARCH_THREADS - 1) / SEARCH_THREADS;
    int64_t from = (int64_t)t * chunk, to = from + chunk < n ? from + chunk : n;
    unsigned long long mine = 0;
    for (int64_t j = from; j < to; j++)
        mine += draw_units(draw_scaled(y, j, c, log_softmax, temperature, inv), mx, inv_sum);
    units[t] = mine;
    __syncthreads();
    if (t == 0) {
        unsigned long long before = 0;
        for (int u = 0; u < SEARCH_THREADS; u++) {
            unsigned long long v = units[u];
            units[u] = before;
            before += v;
        }
        units[SEARCH_THREADS] = before;
        *picked = (int32_t)(n - 1); /* the CPU's: the last, if none passes */
    }
    __syncthreads();

    /* the first token whose running sum passes uniform * total: whole
     * numbers below 2^53, exact as doubles, as whisper_sampling.c's */
    uint64_t m = (uint64_t)row->uniform[0] | ((uint64_t)row->uniform[1] << 32);
    double target = ((double)m * 0x1p-53) * (double)units[SEARCH_THREADS];
    unsigned long long run = units[t];
    if ((double)run <= target && (double)(run + mine) > target)
        for (int64_t j = from; j < to; j++) {
            run += draw_units(draw_scaled(y, j, c, log_softmax, temperature, inv), mx, inv_sum);
            if ((double)run > target) {
                *picked = (int32_t)j;
                break;
            }
        }
    __syncthreads();
    return *picked;
}

#endif
