/* Speaker-embedding features on the device (backend.h, ABI 12): Kaldi's log
 * mel filterbank of every frame of an audio span (`fbank`), and each
 * sequence's frames gathered and less their mean (`gather_centered`), so
 * that the audio goes up instead of its features (CAM++: 80 floats a 10 ms
 * frame, 12.5 times the 160 samples they come from).
 *
 * The spectrum is a radix-2 FFT in double precision, one block a frame,
 * rather than a float32 product against a DFT basis: audio/fft.h's reason
 * holds here too (the log of a quiet bin needs double sums to match its
 * reference), and a 512-point transform is 9 stages of 256 butterflies in
 * shared memory, no table to keep. The window and the twiddles are made
 * once per block, which then takes frames in turn (a grid of the GPU's
 * size). Every step is audio/fbank.c's in its order and precision, so the
 * frames are the CPU's to float32 rounding (the FFT's own order differs). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "cuda_internal.h"
#include "mel_filter_sum.h"

/* n_fft up to 1024 (64 ms at 16 kHz): the frame, its transform, the window
 * and the twiddles in double fit a block's 48 KiB of shared memory. */
#define FBANK_MAX_FFT 1024
#define FBANK_PI      3.14159265358979323846

/* The index of i's bits reversed, for log2n bits. */
static __device__ __forceinline__ int bit_reverse(int i, int log2n)
{
    int r = 0;
    for (int b = 0; b < log2n; b++)
        r |= ((i >> b) & 1) << (log2n - 1 - b);
    return r;
}

/* One block of n_fft / 2 threads per frame at a time. Shared: re, im
 * [n_fft], window [window], twiddles [n_fft / 2] (cos, then -sin), power
 * [n_fft / 2 + 1], all double. */
__global__ void fbank_frames_f64(const float *samples, sw_fbank_params p, int log2n,
                                 const float *banks, int mels, float *out, int64_t frames)
{
    SW_SHARED(double, re, FBANK_MAX_FFT);
    SW_SHARED(double, im, FBANK_MAX_FFT);
    SW_SHARED(double, win, FBANK_MAX_FFT);
    SW_SHARED(double, tw_re, FBANK_MAX_FFT / 2);
    SW_SHARED(double, tw_im, FBANK_MAX_FFT / 2);
    SW_SHARED(double, power, FBANK_MAX_FFT / 2 + 1);
    SW_SHARED(double, mean, 1);
    const int n = p.n_fft, half = n / 2, bins = half + 1, tid = threadIdx.x;
    /* audio/fbank.c's window: symmetric, as torch's periodic=False */
    for (int i = tid; i < p.window; i += blockDim.x) {
        double phase = 2.0 * FBANK_PI * (double)i / (double)(p.window - 1);
        win[i] = p.povey_window ? pow(0.5 - 0.5 * cos(phase), 0.85) : 0.54 - 0.46 * cos(phase);
    }
    for (int m = tid; m < half; m += blockDim.x) {
        double angle = 2.0 * FBANK_PI * (double)m / (double)n;
        tw_re[m] = cos(angle);
        tw_im[m] = -sin(angle);
    }
    for (int64_t t = blockIdx.x; t < frames; t += gridDim.x) {
        const float *x = samples + t * p.shift;
        for (int i = tid; i < p.window; i += blockDim.x)
            re[i] = __dmul_rn((double)x[i], (double)p.input_scale);
        __syncthreads();
        if (tid == 0) { /* summed in order, as the CPU */
            double s = 0.0;
            for (int i = 0; i < p.window; i++)
                s = __dadd_rn(s, re[i]);
            mean[0] = p.remove_dc ? s / (double)p.window : 0.0;
        }
        __syncthreads();
        /* DC removal, pre-emphasis from the unmodified left neighbour (the
         * first sample by itself), the window; the frame goes to its
         * bit-reversed place, the padding is zeros */
        for (int i = tid; i < n; i += blockDim.x) {
            double v = 0.0;
            if (i < p.window) {
                double cur = __dadd_rn(re[i], -mean[0]);
                double left = i > 0 ? __dadd_rn(re[i - 1], -mean[0]) : cur;
                v = __dmul_rn(__dadd_rn(cur, -__dmul_rn((double)p.preemphasis, left)), win[i]);
            }
            im[bit_reverse(i, log2n)] = v; /* im holds the real input for now */
        }
        __syncthreads();
        for (int i = tid; i < n; i += blockDim.x) {
            re[i] = im[i];
            im[i] = 0.0;
        }
        __syncthreads();
        /* the butterflies: thread j takes pair (i0, i0 + len / 2) of each stage */
        for (int len = 2; len <= n; len <<= 1) {
            int h = len / 2, stride = n / len;
            for (int j = tid; j < half; j += blockDim.x) {
                int k = j % h, i0 = (j / h) * len + k, i1 = i0 + h;
                double wr = tw_re[k * stride], wi = tw_im[k * stride];
                double br = re[i1] * wr - im[i1] * wi, bi = re[i1] * wi + im[i1] * wr;
                double ar = re[i0], ai = im[i0];
                re[i0] = ar + br;
                im[i0] = ai + bi;
                re[i1] = ar - br;
                im[i1] = ai - bi;
            }
            __syncthreads();
        }
        for (int k = tid; k < bins; k += blockDim.x)
            power[k] = re[k] * re[k] + im[k] * im[k];
        __syncthreads();
        for (int b = tid; b < mels; b += blockDim.x) {
            double acc = sw_mel_filter_sum(banks + (int64_t)b * bins, power, bins);
            out[t * mels + b] = (float)log(acc > (double)FLT_EPSILON ? acc : (double)FLT_EPSILON);
        }
        __syncthreads(); /* the next frame overwrites re, im and power */
    }
}

static int log2_exact(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return (1 << l) == n ? l : -1;
}

sw_status sw_cuda_fbank(sw_backend *be, const sw_tensor *samples, const sw_fbank_params *p,
                        const sw_tensor *banks, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (samples->dtype != SW_F32 || banks->dtype != SW_F32 || out->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG, "cuda fbank: samples, banks and out must be float32");
    int log2n = log2_exact(p->n_fft);
    if (log2n < 1 || p->n_fft > FBANK_MAX_FFT || p->window < 2 || p->window > p->n_fft ||
        p->shift < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda fbank: n_fft a power of two up to %d, 2 <= window <= n_fft and a "
                       "positive shift needed (got %d, %d, %d)",
                       FBANK_MAX_FFT, (int)p->n_fft, (int)p->window, (int)p->shift);
    int64_t bins = p->n_fft / 2 + 1, n = sw_cuda_numel(samples);
    int64_t mels = banks->ndim == 2 && banks->shape[1] == bins ? banks->shape[0] : 0;
    int64_t frames = n < p->window ? 0 : 1 + (n - p->window) / p->shift;
    if (mels < 1 || out->ndim != 2 || out->shape[0] != frames || out->shape[1] != mels)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda fbank: banks [mels, %lld] and out [%lld frames, mels] needed",
                       (long long)bins, (long long)frames);
    sw_status st;
    if (!sw_cuda_enter_work(c, frames, &st, err))
        return st;
    unsigned grid = (unsigned)(frames < c->max_grid ? frames : c->max_grid);
    SW_LAUNCH(fbank_frames_f64, grid, p->n_fft / 2, 0, c->stream)
    ((const float *)samples->data, *p, log2n, (const float *)banks->data, (int)mels,
     (float *)out->data, frames);
    return sw_cuda_check_launch(c, err, "fbank_frames");
}

/* One thread per (item, column): the item's rows summed in double in order,
 * then each less the mean, rounded once. */
__global__ void gather_centered_f32(const float *table, int64_t table_rows, int64_t c,
                                    const int32_t *ids, const int64_t *off, float *out, int64_t n)
{
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += step) {
        int64_t b = o / c, col = o % c, first = off[b], last = off[b + 1];
        double sum = 0.0;
        for (int64_t r = first; r < last; r++) {
            int64_t id = ids[r];
            sum += id >= 0 && id < table_rows ? (double)table[id * c + col] : 0.0;
        }
        double mean = sum / (double)(last - first);
        for (int64_t r = first; r < last; r++) {
            int64_t id = ids[r];
            double v = id >= 0 && id < table_rows ? (double)table[id * c + col] : 0.0;
            out[r * c + col] = (float)(v - mean);
        }
    }
}

sw_status sw_cuda_gather_centered(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                  int batch, const int64_t *off, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t cols = sw_cuda_last_dim(table);
    int ok = table->dtype == SW_F32 && out->dtype == SW_F32 && ids->dtype == SW_I32 && cols >= 1 &&
             batch >= 1 && off && off[0] == 0 && sw_cuda_last_dim(out) == cols;
    for (int b = 0; ok && b < batch; b++)
        ok = off[b + 1] > off[b];
    if (!ok || sw_cuda_numel(ids) != off[batch] || sw_cuda_numel(out) != off[batch] * cols)
        return sw_fail(err, SW_ERR_ARG,
                       "cuda gather_centered: table [rows, C] and out [n, C] float32, ids [n] "
                       "int32 and batch + 1 rising offsets from 0 to n needed");
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    size_t bytes = (size_t)(batch + 1) * sizeof *off;
    int64_t *d_off = (int64_t *)be->alloc(be, bytes, err);
    if (!d_off || be->upload(be, d_off, off, bytes, err) != SW_OK) {
        be->free(be, d_off);
        return err->code;
    }
    int64_t n = (int64_t)batch * cols;
    SW_LAUNCH(gather_centered_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0,
              c->stream)
    ((const float *)table->data, sw_cuda_numel(table) / cols, cols, (const int32_t *)ids->data,
     d_off, (float *)out->data, n);
    st = sw_cuda_check_launch(c, err, "gather_centered");
    be->free(be, d_off); /* stream order: its next user runs after */
    return st;
}
