#include "mel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fft.h"

static double hz_to_slaney_mel(double hz)
{
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = 15.0;
    const double logstep = log(6.4) / 27.0;
    return hz < min_log_hz ? hz / f_sp : min_log_mel + log(hz / min_log_hz) / logstep;
}

static double slaney_mel_to_hz(double mel)
{
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = 15.0;
    const double logstep = log(6.4) / 27.0;
    return mel < min_log_mel ? f_sp * mel : min_log_hz * exp(logstep * (mel - min_log_mel));
}

sw_status sw_mel_filters(int sample_rate, int n_fft, int n_mels, float **out, sw_error *err)
{
    *out = NULL;
    if (sample_rate <= 0 || n_fft < 2 || n_mels < 1 || n_mels > 1024)
        return sw_fail(err, SW_ERR_ARG, "mel filters: bad sample_rate %d, n_fft %d or n_mels %d",
                       sample_rate, n_fft, n_mels);
    int n_bins = n_fft / 2 + 1;
    float *w = calloc((size_t)n_mels * (size_t)n_bins, sizeof *w);
    double *edges = malloc(sizeof *edges * (size_t)(n_mels + 2));
    if (!w || !edges) {
        free(w);
        free(edges);
        return sw_fail(err, SW_ERR_NOMEM, "mel filters");
    }
    double mel_max = hz_to_slaney_mel(sample_rate / 2.0);
    for (int i = 0; i < n_mels + 2; i++)
        edges[i] = slaney_mel_to_hz(mel_max * i / (n_mels + 1));
    for (int m = 0; m < n_mels; m++) {
        double lo = edges[m], mid = edges[m + 1], hi = edges[m + 2];
        double norm = 2.0 / (hi - lo); /* Slaney: each filter has unit area */
        for (int k = 0; k < n_bins; k++) {
            double f = (double)k * sample_rate / n_fft;
            double up = (f - lo) / (mid - lo), down = (hi - f) / (hi - mid);
            double v = up < down ? up : down;
            w[(size_t)m * n_bins + k] = v > 0.0 ? (float)(v * norm) : 0.0f;
        }
    }
    free(edges);
    *out = w;
    return SW_OK;
}

size_t sw_log_mel_frames(size_t n_samples, size_t padding)
{
    /* centred STFT has 1 + L / hop frames; Whisper drops the last one */
    return (n_samples + padding) / SW_WHISPER_HOP;
}

/* Sample i of the zero-padded signal, reflected at both ends as torch.stft's
 * center=True does (repeatedly, for signals shorter than the pad). */
static double padded_sample(const float *x, size_t n, size_t len, long i)
{
    if (len == 1)
        return n > 0 ? x[0] : 0.0;
    long period = 2 * ((long)len - 1);
    long j = i % period;
    if (j < 0)
        j += period;
    if (j >= (long)len)
        j = period - j;
    return (size_t)j < n ? x[j] : 0.0;
}

typedef struct mel_job {
    const float *x;
    size_t n, len, n_frames;
    int n_mels;
    const float *filters;
    const int *f_begin, *f_end; /* non-zero range of each filter */
    const sw_fft *fft;
    const double *window;
    double *log_mel; /* n_frames x n_mels, frame-major while computing */
    int take_log;    /* log10 (Whisper) or the mel power itself (GE2E) */
    int failed;
} mel_job;

static void mel_frames(void *ctx, size_t begin, size_t end)
{
    mel_job *j = ctx;
    double frame[SW_WHISPER_N_FFT], power[SW_WHISPER_N_BINS];
    double complex *work = malloc(sizeof *work * 2 * SW_WHISPER_N_FFT);
    if (!work) {
        j->failed = 1;
        return;
    }
    for (size_t t = begin; t < end; t++) {
        long start = (long)(t * SW_WHISPER_HOP) - SW_WHISPER_N_FFT / 2;
        for (int i = 0; i < SW_WHISPER_N_FFT; i++)
            frame[i] = padded_sample(j->x, j->n, j->len, start + i) * j->window[i];
        sw_fft_power(j->fft, frame, work, power);
        double *row = j->log_mel + t * (size_t)j->n_mels;
        sw_apply_filters(j->filters, j->n_mels, SW_WHISPER_N_BINS, j->f_begin, j->f_end, power,
                         row);
        for (int m = 0; j->take_log && m < j->n_mels; m++)
            row[m] = log10(row[m] > 1e-10 ? row[m] : 1e-10);
    }
    free(work);
}

/* The mel rows of every frame, frame-major, in *rows (malloc'ed): the part
 * Whisper's log-mel and the GE2E encoder's mel power share. */
static sw_status mel_rows(const float *samples, size_t n_samples, size_t padding, int n_mels,
                          int take_log, sw_threadpool *tp, double **rows, size_t *n_frames,
                          sw_error *err)
{
    *rows = NULL;
    *n_frames = 0;
    if (n_mels < 1 || n_mels > 128)
        return sw_fail(err, SW_ERR_ARG, "n_mels must be 1 to 128, got %d", n_mels);
    if (n_samples > ((size_t)1 << 40) || padding > ((size_t)1 << 40))
        return sw_fail(err, SW_ERR_ARG, "audio too long for a spectrogram");
    size_t len = n_samples + padding;
    size_t frames = sw_log_mel_frames(n_samples, padding);
    if (frames == 0)
        return sw_fail(err, SW_ERR_ARG, "audio of %zu samples is shorter than one hop (%d)", len,
                       SW_WHISPER_HOP);
    for (size_t i = 0; i < n_samples; i++)
        if (!isfinite(samples[i]))
            return sw_fail(err, SW_ERR_ARG, "sample %zu is not finite", i);

    sw_fft *fft = NULL;
    float *filters = NULL;
    double *out = NULL, window[SW_WHISPER_N_FFT];
    if (sw_fft_create(SW_WHISPER_N_FFT, &fft, err) != SW_OK ||
        sw_mel_filters(SW_WHISPER_SAMPLE_RATE, SW_WHISPER_N_FFT, n_mels, &filters, err) != SW_OK)
        goto done;
    out = malloc(sizeof *out * frames * (size_t)n_mels);
    if (!out) {
        sw_fail(err, SW_ERR_NOMEM, "spectrogram of %zu frames", frames);
        goto done;
    }
    for (int i = 0; i < SW_WHISPER_N_FFT; i++) /* periodic Hann */
        window[i] = 0.5 - 0.5 * cos(2.0 * M_PI * i / SW_WHISPER_N_FFT);

    int f_begin[128], f_end[128];
    sw_filter_ranges(filters, n_mels, SW_WHISPER_N_BINS, f_begin, f_end);
    mel_job job = {samples, n_samples, len,    frames, n_mels,   filters, f_begin,
                   f_end,   fft,       window, out,    take_log, 0};
    sw_parallel_for(tp, frames, 64, mel_frames, &job);
    if (job.failed) {
        sw_fail(err, SW_ERR_NOMEM, "spectrogram work buffers");
        goto done;
    }
    *rows = out;
    *n_frames = frames;
    out = NULL;
done:
    free(out);
    free(filters);
    sw_fft_destroy(fft);
    return err->code;
}

sw_status sw_log_mel(const float *samples, size_t n_samples, size_t padding, int n_mels,
                     sw_threadpool *tp, float **out, size_t *n_frames, sw_error *err)
{
    *out = NULL;
    *n_frames = 0;
    if (n_mels != 80 && n_mels != 128)
        return sw_fail(err, SW_ERR_ARG, "n_mels must be 80 or 128, got %d", n_mels);
    double *log_mel = NULL;
    size_t frames = 0;
    if (mel_rows(samples, n_samples, padding, n_mels, 1, tp, &log_mel, &frames, err) != SW_OK)
        return err->code;
    float *result = malloc(sizeof *result * frames * (size_t)n_mels);
    if (!result) {
        free(log_mel);
        return sw_fail(err, SW_ERR_NOMEM, "spectrogram of %zu frames", frames);
    }
    double mx = -INFINITY;
    for (size_t i = 0; i < frames * (size_t)n_mels; i++)
        mx = log_mel[i] > mx ? log_mel[i] : mx;
    double floor_db = mx - 8.0;
    for (size_t t = 0; t < frames; t++)
        for (int m = 0; m < n_mels; m++) {
            double v = log_mel[t * (size_t)n_mels + (size_t)m];
            v = v > floor_db ? v : floor_db;
            result[(size_t)m * frames + t] = (float)((v + 4.0) / 4.0);
        }
    free(log_mel);
    *out = result;
    *n_frames = frames;
    return SW_OK;
}

sw_status sw_mel_power(const float *samples, size_t n_samples, int n_mels, sw_threadpool *tp,
                       float **out, size_t *n_frames, sw_error *err)
{
    *out = NULL;
    *n_frames = 0;
    double *rows = NULL;
    size_t frames = 0;
    if (mel_rows(samples, n_samples, 0, n_mels, 0, tp, &rows, &frames, err) != SW_OK)
        return err->code;
    float *result = malloc(sizeof *result * frames * (size_t)n_mels);
    if (!result) {
        free(rows);
        return sw_fail(err, SW_ERR_NOMEM, "spectrogram of %zu frames", frames);
    }
    for (size_t i = 0; i < frames * (size_t)n_mels; i++)
        result[i] = (float)rows[i];
    free(rows);
    *out = result;
    *n_frames = frames;
    return SW_OK;
}
