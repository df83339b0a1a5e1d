/* A mel filter applied to one frame's power spectrum in double, shared by
 * fbank (features.cu, which takes the log after) and mel_power (mel_power.cu,
 * which does not). The bins go in order and each product and sum is rounded
 * once, as audio/fft.c's sw_apply_filters on the CPU; the zeros outside the
 * filter's range add nothing, so the sum is the CPU's over its range. */
#ifndef SW_CUDA_MEL_FILTER_SUM_H
#define SW_CUDA_MEL_FILTER_SUM_H

/* f: the filter's weights [bins]; power: the spectrum [bins] */
static __device__ double sw_mel_filter_sum(const float *f, const double *power, int bins)
{
    double acc = 0.0;
    for (int k = 0; k < bins; k++)
        if (f[k] != 0.0f)
            acc = __dadd_rn(acc, __dmul_rn((double)f[k], power[k]));
    return acc;
}

#endif
