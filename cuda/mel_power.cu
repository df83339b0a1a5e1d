/* GE2E's features on the device (backend.h, ABI 16): the mel power
 * spectrogram of an audio span (`mel_power`, audio/mel.c's sw_mel_power:
 * centred frames reflected at the ends, a periodic Hann window, no log),
 * and each partial's frames gathered from it, scaled by its sequence's
 * volume gain (`gather_scaled`), so that the span goes up instead of 40
 * floats a frame of every partial (which overlap by half, and chunks by
 * nine tenths).
 *
 * GE2E's transform is 400 points (25 ms at 16 kHz), not a power of two, so
 * fbank's radix-2 kernel (features.cu) cannot take it: each bin here is a
 * direct sum over the frame in double, the cos and sin of its angle read
 * from a table of the n_fft roots (k * i mod n_fft indexes it exactly). 201
 * bins of 400 products a frame is small beside the LSTM that reads them.
 * The CPU's FFT sums in another order, so the frames are the CPU's to
 * float32 rounding, not bit for bit. */
#include <math.h>

#include "cuda_internal.h"
#include "mel_filter_sum.h"

#define MEL_MAX_FFT 512
#define MEL_PI      3.14159265358979323846

/* Sample i of the span (i may lie before it or past its end), reflected as
 * torch.stft's center=True, repeatedly for a span shorter than the pad:
 * audio/mel.c's padded_sample. */
static __device__ __forceinline__ double reflected(const float *x, int64_t n, int64_t i)
{
    if (n == 1)
        return x[0];
    int64_t period = 2 * (n - 1), j = i % period;
    if (j < 0)
        j += period;
    if (j >= n)
        j = period - j;
    return x[j];
}

/* One block per frame at a time. Shared (double): the windowed frame, the
 * roots' cos and -sin [n_fft], the power [n_fft / 2 + 1]. */
__global__ void mel_power_f64(const float *samples, int64_t n, int n_fft, int hop,
                              const float *banks, int mels, float *out, int64_t frames)
{
    SW_SHARED(double, frame, MEL_MAX_FFT);
    SW_SHARED(double, root_re, MEL_MAX_FFT);
    SW_SHARED(double, root_im, MEL_MAX_FFT);
    SW_SHARED(double, power, MEL_MAX_FFT / 2 + 1);
    const int bins = n_fft / 2 + 1, tid = threadIdx.x;
    for (int m = tid; m < n_fft; m += blockDim.x) {
        double angle = 2.0 * MEL_PI * (double)m / (double)n_fft;
        root_re[m] = cos(angle);
        root_im[m] = -sin(angle);
    }
    for (int64_t t = blockIdx.x; t < frames; t += gridDim.x) {
        int64_t first = t * hop - n_fft / 2;
        for (int i = tid; i < n_fft; i += blockDim.x) {
            double hann = 0.5 - 0.5 * cos(2.0 * MEL_PI * (double)i / (double)n_fft);
            frame[i] = reflected(samples, n, first + i) * hann;
        }
        __syncthreads();
        for (int k = tid; k < bins; k += blockDim.x) {
            double re = 0.0, im = 0.0;
            int at = 0; /* k * i mod n_fft, kept without a product */
            for (int i = 0; i < n_fft; i++) {
                re += frame[i] * root_re[at];
                im += frame[i] * root_im[at];
                at += k;
                if (at >= n_fft)
                    at -= n_fft;
            }
            power[k] = re * re + im * im;
        }
        __syncthreads();
        for (int b = tid; b < mels; b += blockDim.x)
            out[t * mels + b] = (float)sw_mel_filter_sum(banks + (int64_t)b * bins, power, bins);
        __syncthreads(); /* the next frame overwrites frame and power */
    }
}

sw_status sw_cuda_mel_power(sw_backend *be, const sw_tensor *samples, int n_fft, int hop,
                            const sw_tensor *banks, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (samples->dtype != SW_F32 || banks->dtype != SW_F32 || out->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG, "cuda mel_power: samples, banks and out must be float32");
    if (n_fft < 2 || n_fft > MEL_MAX_FFT || hop < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda mel_power: n_fft 2 to %d and a positive hop needed (got %d, %d)",
                       MEL_MAX_FFT, n_fft, hop);
    int64_t bins = n_fft / 2 + 1, n = sw_cuda_numel(samples);
    int64_t mels = banks->ndim == 2 && banks->shape[1] == bins ? banks->shape[0] : 0;
    int64_t frames = n / hop; /* audio/mel.c's sw_log_mel_frames: the last frame dropped */
    if (n < 1 || mels < 1 || out->ndim != 2 || out->shape[0] != frames || out->shape[1] != mels)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda mel_power: samples, banks [mels, %lld] and out [%lld frames, mels] "
                       "needed",
                       (long long)bins, (long long)frames);
    sw_status st;
    if (!sw_cuda_enter_work(c, frames, &st, err))
        return st;
    unsigned grid = (unsigned)(frames < c->max_grid ? frames : c->max_grid);
    int threads = (int)((bins + 31) / 32 * 32);
    SW_LAUNCH(mel_power_f64, grid, threads, 0, c->stream)
    ((const float *)samples->data, n, n_fft, hop, (const float *)banks->data, (int)mels,
     (float *)out->data, frames);
    return sw_cuda_check_launch(c, err, "mel_power");
}

/* One thread per output value: row r of item r / rows_per_item. */
__global__ void gather_scaled_f32(const float *table, int64_t table_rows, int64_t c,
                                  const int32_t *ids, const float *scales, int64_t rows_per_item,
                                  float *out, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t r = o / c, col = o % c, id = ids[r];
        /* float32 times float32, rounded once: numpy's frames * float32(gain) */
        out[o] =
            id >= 0 && id < table_rows ? table[id * c + col] * scales[r / rows_per_item] : 0.0f;
    }
}

sw_status sw_cuda_gather_scaled(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                const sw_tensor *scales, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t cols = sw_cuda_last_dim(table);
    int ok = table->dtype == SW_F32 && out->dtype == SW_F32 && ids->dtype == SW_I32 &&
             scales->dtype == SW_F32 && cols >= 1 && out->ndim == 3 && out->shape[2] == cols &&
             sw_cuda_numel(ids) == out->shape[0] * out->shape[1] &&
             sw_cuda_numel(scales) == out->shape[0];
    if (!ok)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda gather_scaled: table [rows, C] and out [items, frames, C] float32, "
                       "ids [items * frames] int32 and scales [items] float32 needed");
    int64_t n = sw_cuda_numel(out);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(gather_scaled_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)table->data, sw_cuda_numel(table) / cols, cols, (const int32_t *)ids->data,
     (const float *)scales->data, out->shape[1], (float *)out->data, n);
    return sw_cuda_check_launch(c, err, "gather_scaled");
}
