/* A small mixed-radix FFT in double precision for the spectrogram front ends
 * (n = 400 for Whisper, 512 for Kaldi fbank). Double precision keeps the log of
 * quiet bins exact enough that the features match their references to 1e-4
 * after the float32 output; the cost is negligible next to the models. */
#ifndef SW_FFT_H
#define SW_FFT_H

#include <complex.h>

#include "status.h"

typedef struct sw_fft sw_fft;

/* n must factor into primes no larger than 61. */
sw_status sw_fft_create(int n, sw_fft **out, sw_error *err);
void sw_fft_destroy(sw_fft *fft);

/* Forward DFT of n complex values: out[k] = sum_j in[j] exp(-2 pi i j k / n).
 * in and out must not overlap. Thread safe: the plan is read only. */
void sw_fft_forward(const sw_fft *fft, const double complex *in, double complex *out);

/* Power |X_k|^2 of the n real inputs, for k = 0 .. n/2. work holds 2n complex. */
void sw_fft_power(const sw_fft *fft, const double *in, double complex *work, double *power);

/* Each row of a filterbank (rows x cols) is zero outside [begin, end): find
 * those ranges so the product with a spectrum skips the zeros. */
void sw_filter_ranges(const float *filters, int rows, int cols, int *begin, int *end);

/* Dot products of the filter rows with a power spectrum, over their ranges. */
void sw_apply_filters(const float *filters, int rows, int cols, const int *begin, const int *end,
                      const double *power, double *out);

#endif
