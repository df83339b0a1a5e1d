#include "fbank.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fft.h"

sw_fbank_options sw_fbank_default_options(void)
{
    sw_fbank_options o = {16000, 80, 25.0f, 10.0f, 20.0f, 0.0f, 0.97f, 1, 32768.0f, 1, 0};
    return o;
}

static size_t window_samples(const sw_fbank_options *o)
{
    return (size_t)(o->sample_rate * 0.001 * o->frame_length_ms);
}

static size_t shift_samples(const sw_fbank_options *o)
{
    return (size_t)(o->sample_rate * 0.001 * o->frame_shift_ms);
}

static int padded_size(size_t window)
{
    int n = 1;
    while ((size_t)n < window)
        n <<= 1;
    return n;
}

size_t sw_fbank_frames(const sw_fbank_options *opt, size_t n_samples)
{
    size_t w = window_samples(opt), s = shift_samples(opt);
    if (n_samples < w || s == 0)
        return 0;
    return 1 + (n_samples - w) / s;
}

static double kaldi_mel(double hz)
{
    return 1127.0 * log(1.0 + hz / 700.0);
}

static sw_status check_options(const sw_fbank_options *o, sw_error *err)
{
    double nyquist = 0.5 * o->sample_rate;
    double high = o->high_freq > 0.0f ? o->high_freq : nyquist + o->high_freq;
    if (o->sample_rate < 1000 || o->sample_rate > 384000)
        return sw_fail(err, SW_ERR_ARG, "fbank: sample_rate %d out of range", o->sample_rate);
    if (o->num_mel_bins < 3 || o->num_mel_bins > 512)
        return sw_fail(err, SW_ERR_ARG, "fbank: num_mel_bins %d out of range", o->num_mel_bins);
    if (!(o->frame_length_ms > 0.0f) || !(o->frame_shift_ms > 0.0f) || window_samples(o) < 2 ||
        shift_samples(o) < 1 || window_samples(o) > 65536)
        return sw_fail(err, SW_ERR_ARG, "fbank: frame length and shift must be positive");
    if (!(o->low_freq >= 0.0f) || !(high > o->low_freq) || high > nyquist)
        return sw_fail(err, SW_ERR_ARG, "fbank: need 0 <= low_freq < high_freq <= %g", nyquist);
    if (!(o->preemphasis >= 0.0f && o->preemphasis <= 1.0f) || !isfinite(o->input_scale))
        return sw_fail(err, SW_ERR_ARG, "fbank: preemphasis or input_scale out of range");
    return SW_OK;
}

sw_status sw_kaldi_mel_banks(const sw_fbank_options *o, float **out, int *n_fft_bins, sw_error *err)
{
    *out = NULL;
    if (check_options(o, err) != SW_OK)
        return err->code;
    int n_fft = padded_size(window_samples(o));
    int n_bins = n_fft / 2 + 1;
    float *banks = calloc((size_t)o->num_mel_bins * (size_t)n_bins, sizeof *banks);
    if (!banks)
        return sw_fail(err, SW_ERR_NOMEM, "fbank filters");
    double nyquist = 0.5 * o->sample_rate;
    double high = o->high_freq > 0.0f ? o->high_freq : nyquist + o->high_freq;
    double mel_lo = kaldi_mel(o->low_freq), mel_hi = kaldi_mel(high);
    double delta = (mel_hi - mel_lo) / (o->num_mel_bins + 1);
    double bin_hz = (double)o->sample_rate / n_fft;
    for (int b = 0; b < o->num_mel_bins; b++) {
        double left = mel_lo + b * delta, centre = left + delta, right = centre + delta;
        /* Kaldi leaves the Nyquist bin out of every filter */
        for (int k = 0; k < n_bins - 1; k++) {
            double mel = kaldi_mel(bin_hz * k);
            double up = (mel - left) / (centre - left), down = (right - mel) / (right - centre);
            double v = up < down ? up : down;
            banks[(size_t)b * n_bins + k] = v > 0.0 ? (float)v : 0.0f;
        }
    }
    *out = banks;
    *n_fft_bins = n_bins;
    return SW_OK;
}

typedef struct fbank_job {
    const float *x;
    const sw_fbank_options *o;
    size_t window, shift;
    int n_fft, n_bins;
    const sw_fft *fft;
    const double *hamming;
    const float *banks;
    const int *b_begin, *b_end; /* non-zero range of each filter */
    float *out;
    int failed;
} fbank_job;

static void fbank_frames(void *ctx, size_t begin, size_t end)
{
    fbank_job *j = ctx;
    const sw_fbank_options *o = j->o;
    double *frame = calloc((size_t)j->n_fft, sizeof *frame);
    double *power = malloc(sizeof *power * (size_t)j->n_bins);
    double complex *work = malloc(sizeof *work * 2 * (size_t)j->n_fft);
    double *energies = malloc(sizeof *energies * (size_t)o->num_mel_bins);
    if (!frame || !power || !work || !energies) {
        j->failed = 1;
        goto done;
    }
    for (size_t t = begin; t < end; t++) {
        const float *x = j->x + t * j->shift;
        double mean = 0.0;
        for (size_t i = 0; i < j->window; i++) {
            frame[i] = (double)x[i] * o->input_scale;
            mean += frame[i];
        }
        mean /= (double)j->window;
        if (o->remove_dc_offset)
            for (size_t i = 0; i < j->window; i++)
                frame[i] -= mean;
        /* pre-emphasis runs backwards so each step sees the unmodified left
         * neighbour; the first sample uses itself (Kaldi's convention) */
        for (size_t i = j->window - 1; i > 0; i--)
            frame[i] -= o->preemphasis * frame[i - 1];
        frame[0] -= o->preemphasis * frame[0];
        for (size_t i = 0; i < j->window; i++)
            frame[i] *= j->hamming[i];
        for (int i = (int)j->window; i < j->n_fft; i++)
            frame[i] = 0.0;
        sw_fft_power(j->fft, frame, work, power);
        float *row = j->out + t * (size_t)o->num_mel_bins;
        sw_apply_filters(j->banks, o->num_mel_bins, j->n_bins, j->b_begin, j->b_end, power,
                         energies);
        for (int b = 0; b < o->num_mel_bins; b++)
            row[b] = (float)log(energies[b] > FLT_EPSILON ? energies[b] : FLT_EPSILON);
    }
done:
    free(frame);
    free(power);
    free(work);
    free(energies);
}

sw_status sw_fbank(const float *samples, size_t n_samples, const sw_fbank_options *opt,
                   sw_threadpool *tp, float **out, size_t *n_frames, sw_error *err)
{
    *out = NULL;
    *n_frames = 0;
    sw_fbank_options defaults = sw_fbank_default_options();
    const sw_fbank_options *o = opt ? opt : &defaults;
    if (check_options(o, err) != SW_OK)
        return err->code;
    for (size_t i = 0; i < n_samples; i++)
        if (!isfinite(samples[i]))
            return sw_fail(err, SW_ERR_ARG, "sample %zu is not finite", i);
    size_t frames = sw_fbank_frames(o, n_samples);
    if (frames == 0)
        return sw_fail(err, SW_ERR_ARG, "fbank: %zu samples are fewer than one frame (%zu)",
                       n_samples, window_samples(o));

    fbank_job j;
    memset(&j, 0, sizeof j);
    j.x = samples;
    j.o = o;
    j.window = window_samples(o);
    j.shift = shift_samples(o);
    int *ranges = NULL;
    double *hamming = NULL;
    float *banks = NULL, *result = NULL;
    sw_fft *fft = NULL;
    j.n_fft = padded_size(j.window);
    if (sw_kaldi_mel_banks(o, &banks, &j.n_bins, err) != SW_OK ||
        sw_fft_create(j.n_fft, &fft, err) != SW_OK)
        goto done;
    hamming = malloc(sizeof *hamming * j.window);
    result = malloc(sizeof *result * frames * (size_t)o->num_mel_bins);
    ranges = malloc(sizeof *ranges * 2 * (size_t)o->num_mel_bins);
    if (!hamming || !result || !ranges) {
        sw_fail(err, SW_ERR_NOMEM, "fbank of %zu frames", frames);
        goto done;
    }
    for (size_t i = 0; i < j.window; i++) { /* symmetric, as torch's periodic=False */
        double phase = 2.0 * M_PI * (double)i / (double)(j.window - 1);
        hamming[i] = o->povey_window ? pow(0.5 - 0.5 * cos(phase), 0.85) : 0.54 - 0.46 * cos(phase);
    }
    j.fft = fft;
    j.hamming = hamming;
    j.banks = banks;
    sw_filter_ranges(banks, o->num_mel_bins, j.n_bins, ranges, ranges + o->num_mel_bins);
    j.b_begin = ranges;
    j.b_end = ranges + o->num_mel_bins;
    j.out = result;
    sw_parallel_for(tp, frames, 64, fbank_frames, &j);
    if (j.failed) {
        sw_fail(err, SW_ERR_NOMEM, "fbank work buffers");
        goto done;
    }
    if (o->subtract_mean) {
        int nb = o->num_mel_bins;
        for (int b = 0; b < nb; b++) {
            double mean = 0.0;
            for (size_t t = 0; t < frames; t++)
                mean += result[t * (size_t)nb + (size_t)b];
            mean /= (double)frames;
            for (size_t t = 0; t < frames; t++)
                result[t * (size_t)nb + (size_t)b] -= (float)mean;
        }
    }
    *out = result;
    *n_frames = frames;
    result = NULL;
done:
    free(ranges);
    free(result);
    free(hamming);
    free(banks);
    sw_fft_destroy(fft);
    return err->code;
}
