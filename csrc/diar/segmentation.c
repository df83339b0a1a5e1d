/* The segmentation forward: SincNet, the LSTM stack, the dense head. Every
 * intermediate lives in the backend's pool only for as long as the next
 * layer needs it, so the peak is two layers' activations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fused_ops.h"
#include "audio_span.h"
#include "segmentation_internal.h"

int64_t sw_segmentation_frames(int64_t samples)
{
    int64_t t = sw_window_frames(samples, SEG_SINC_TAPS, SEG_SINC_STRIDE);
    t = sw_window_frames(t, SEG_POOL, SEG_POOL);
    for (int i = 0; i < 2; i++)
        t = sw_window_frames(sw_window_frames(t, SEG_CONV_TAPS, 1), SEG_POOL, SEG_POOL);
    return t;
}

/* A tensor of this call: allocated on demand, freed on every path. */
static sw_status fresh(sw_backend *be, sw_tensor *t, int64_t d0, int64_t d1, int64_t d2,
                       sw_error *err)
{
    int64_t shape[3] = {d0, d1, d2};
    return sw_tensor_new(be, SW_F32, 3, shape, t, err);
}

static sw_tensor view2(const sw_tensor *t, int64_t d0, int64_t d1)
{
    sw_tensor v = *t;
    v.ndim = 2;
    v.shape[0] = d0;
    v.shape[1] = d1;
    return v;
}

/* x [B, T, C_in] -> conv (no padding) -> max pool 3 -> instance norm ->
 * leaky ReLU, into *y; block 0 takes |conv| first (SincNet's magnitude).
 * x is freed once read. */
static sw_status sinc_block(sw_segmentation *m, int i, sw_tensor *x, sw_tensor *y, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int stride = i == 0 ? SEG_SINC_STRIDE : 1;
    int64_t b = x->shape[0], c = m->conv_w[i].shape[0];
    int64_t t_conv = sw_window_frames(x->shape[1], m->conv_w[i].shape[2], stride);
    sw_tensor conv = {0};
    if (fresh(be, &conv, b, t_conv, c, err) == SW_OK &&
        sw_conv1d(x, &m->conv_w[i], i == 0 ? NULL : &m->conv_b[i], stride, 0, &conv, err) ==
            SW_OK) {
        sw_tensor_free(x);
        if ((i > 0 || sw_abs(&conv, &conv, err) == SW_OK) &&
            fresh(be, y, b, sw_window_frames(t_conv, SEG_POOL, SEG_POOL), c, err) == SW_OK &&
            sw_max_pool1d(&conv, SEG_POOL, SEG_POOL, y, err) == SW_OK &&
            sw_instance_norm(y, &m->norm_w[i], &m->norm_b[i], SEG_NORM_EPS, y, err) == SW_OK)
            sw_leaky_relu(y, SEG_LEAKY_SLOPE, y, err);
    }
    sw_tensor_free(&conv);
    sw_tensor_free(x);
    return err->code;
}

/* rows of x [n, in] -> y [n, out] = x w^T + b, then leaky ReLU unless last */
static sw_status dense(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias, sw_tensor *y,
                       int activate, sw_error *err)
{
    if (sw_matmul(x, w, y, 1, 1.0f, 0.0f, err) == SW_OK && sw_add(y, bias, y, err) == SW_OK &&
        activate)
        sw_leaky_relu(y, SEG_LEAKY_SLOPE, y, err);
    return err->code;
}

static sw_status forward_tail(sw_segmentation *m, sw_tensor *x, float *out, sw_error *err);

static sw_status forward(sw_segmentation *m, sw_tensor *wave, float *out, sw_error *err)
{
    sw_tensor x = {0}, y = {0};
    /* the waveform is [B, T, 1]: one channel normalised over time */
    if (sw_instance_norm(wave, &m->wav_norm_w, &m->wav_norm_b, SEG_NORM_EPS, wave, err) != SW_OK)
        return err->code;
    x = *wave;
    memset(wave, 0, sizeof *wave); /* x owns it now */
    sinc_block(m, 0, &x, &y, err);
    return forward_tail(m, &y, out, err);
}

/* From SincNet's first layer's output x (freed here) to the log-probabilities. */
static sw_status forward_tail(sw_segmentation *m, sw_tensor *x_in, float *out, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int64_t b = x_in->shape[0];
    sw_tensor x = *x_in, y = {0};
    memset(x_in, 0, sizeof *x_in);
    for (int i = 1; i < 3 && err->code == SW_OK; i++) {
        sinc_block(m, i, &x, &y, err);
        x = y;
        memset(&y, 0, sizeof y);
    }
    int64_t frames = x.shape[1];
    for (int l = 0; l < SEG_LSTM_LAYERS && err->code == SW_OK; l++) {
        if (fresh(be, &y, b, frames, 2 * SEG_LSTM_HIDDEN, err) == SW_OK)
            sw_lstm(&x, &m->lstm_ih[l], &m->lstm_hh[l], &m->lstm_b[l], &y, err);
        sw_tensor_free(&x);
        x = y;
        memset(&y, 0, sizeof y);
    }
    int64_t rows = b * frames;
    sw_tensor h[2] = {{0}, {0}}, logits = {0};
    if (err->code == SW_OK && fresh(be, &h[0], 1, rows, SEG_LINEAR, err) == SW_OK &&
        fresh(be, &h[1], 1, rows, SEG_LINEAR, err) == SW_OK &&
        fresh(be, &logits, 1, rows, SW_SEG_CLASSES, err) == SW_OK) {
        sw_tensor xin = view2(&x, rows, 2 * SEG_LSTM_HIDDEN), h0 = view2(&h[0], rows, SEG_LINEAR);
        sw_tensor h1 = view2(&h[1], rows, SEG_LINEAR);
        sw_tensor lg = view2(&logits, rows, SW_SEG_CLASSES);
        if (dense(&xin, &m->lin_w[0], &m->lin_b[0], &h0, 1, err) == SW_OK &&
            dense(&h0, &m->lin_w[1], &m->lin_b[1], &h1, 1, err) == SW_OK &&
            dense(&h1, &m->cls_w, &m->cls_b, &lg, 0, err) == SW_OK &&
            sw_log_softmax(&lg, &lg, err) == SW_OK)
            be->download(be, out, logits.data, sw_tensor_nbytes(&logits), err);
    }
    sw_tensor_free(&h[0]);
    sw_tensor_free(&h[1]);
    sw_tensor_free(&logits);
    sw_tensor_free(&x);
    return err->code;
}

/* The checks both entries share: a live backend, windows of at least a frame. */
static sw_status usable(const sw_segmentation *m, int64_t samples, sw_error *err)
{
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    if (sw_segmentation_frames(samples) < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "segmentation: %lld samples are too few for one frame (10 s is 160000)",
                       (long long)samples);
    return SW_OK;
}

sw_status sw_segmentation_run(sw_segmentation *m, const float *waveforms, int batch,
                              int64_t samples, float *out, sw_error *err)
{
    if (!m || !waveforms || !out || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "segmentation: model, waveforms and out needed");
    if (usable(m, samples, err) != SW_OK)
        return err->code;
    sw_tensor wave = {0};
    if (fresh(m->obj.be, &wave, batch, samples, 1, err) != SW_OK)
        return err->code;
    if (m->obj.be->upload(m->obj.be, wave.data, waveforms, sw_tensor_nbytes(&wave), err) == SW_OK)
        forward(m, &wave, out, err);
    sw_tensor_free(&wave);
    return err->code;
}

/* Each window's mean and 1 / std over its samples (in double, as the
 * instance norm takes them), as the affine pair its first layer needs:
 * conv(norm(w))[t, c] = scale * conv(w)[t, c] + shift * sum of filter c. */
static void window_affine(const sw_segmentation *m, const float *w, int64_t n, double *scale,
                          double *shift)
{
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; i++)
        mean += w[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        double d = w[i] - mean;
        var += d * d;
    }
    double inv = 1.0 / sqrt(var / (double)n + (double)SEG_NORM_EPS);
    *scale = inv * m->wav_gamma;
    *shift = m->wav_beta - mean * inv * m->wav_gamma;
}

/* whole [1, frames, 80] = SincNet's first convolution of the raw span.
 * `up` (already on the device) holds the span's samples first. */
static sw_status span_conv(sw_segmentation *m, const sw_tensor *up, int64_t span_samples,
                           sw_tensor *whole, sw_error *err)
{
    sw_tensor wave = sw_tensor_slice(up, 0, 3, 1, span_samples, 1);
    int64_t t_span = sw_window_frames(span_samples, SEG_SINC_TAPS, SEG_SINC_STRIDE);
    if (fresh(m->obj.be, whole, 1, t_span, SEG_SINC_FILTERS, err) == SW_OK)
        sw_conv1d(&wave, &m->conv_w[0], NULL, SEG_SINC_STRIDE, 0, whole, err);
    return err->code;
}

/* y [B, pooled frames, 80]: window i's stretch of `whole` (from frame
 * first[i]) times scale[i] plus shifts[i], its magnitude, max-pooled by 3,
 * in one pass of the backend's span_abs_pool: the stretches are never
 * written out. */
static sw_status pooled_windows(sw_segmentation *m, const sw_tensor *whole, const int64_t *first,
                                const float *scale, const float *shifts, int batch, int64_t t_conv,
                                sw_tensor *y, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int64_t t_span = whole->shape[1], t_pool = sw_window_frames(t_conv, SEG_POOL, SEG_POOL);
    if (fresh(be, y, batch, t_pool, SEG_SINC_FILTERS, err) != SW_OK)
        return err->code;
    sw_tensor rows = sw_tensor_slice(whole, 0, 2, t_span, SEG_SINC_FILTERS, 0);
    return sw_span_abs_pool(&rows, first, scale, shifts, SEG_POOL, y, err);
}

/* The span's samples up, one copy. */
static sw_status upload_span(sw_segmentation *m, const float *span, int64_t span_samples,
                             sw_tensor *up, sw_error *err)
{
    sw_backend *be = m->obj.be;
    if (fresh(be, up, 1, span_samples, 1, err) == SW_OK)
        be->upload(be, up->data, span, sw_tensor_nbytes(up), err);
    return err->code;
}

sw_status sw_segmentation_run_span(sw_segmentation *m, const float *span, int64_t span_samples,
                                   const sw_tensor *on_device, const int64_t *offsets, int batch,
                                   int64_t samples, float *out, sw_error *err)
{
    if (!m || !span || !offsets || !out || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "segmentation: model, span, offsets and out needed");
    if (usable(m, samples, err) != SW_OK)
        return err->code;
    if (!sw_supports(m->obj.be, SW_CAP_SPAN_ABS_POOL, 0, 0)) /* the one path needs it */
        return sw_fail(err, SW_ERR_DEVICE,
                       "segmentation over a span needs the backend's span_abs_pool entry, which "
                       "the %s backend does not have",
                       m->obj.be->name);
    if (on_device && !sw_span_on(on_device, m->obj.be, span_samples))
        return sw_fail(err, SW_ERR_ARG,
                       "segmentation: the span on the device is not %lld float32 samples on "
                       "the model's backend",
                       (long long)span_samples);
    for (int i = 0; i < batch; i++)
        if (offsets[i] < 0 || offsets[i] % SEG_SINC_STRIDE || offsets[i] > span_samples - samples)
            return sw_fail(err, SW_ERR_ARG,
                           "segmentation: window %d at %lld is not a multiple of %d samples "
                           "inside the span of %lld",
                           i, (long long)offsets[i], SEG_SINC_STRIDE, (long long)span_samples);
    /* each window's affine input norm, carried through the convolution:
     * its scale, and its shift times each filter's sum */
    float *shifts = malloc((size_t)batch * SEG_SINC_FILTERS * sizeof *shifts);
    float *scale = malloc((size_t)batch * sizeof *scale);
    int64_t *first = malloc((size_t)batch * sizeof *first);
    if (!shifts || !scale || !first) {
        free(shifts);
        free(scale);
        free(first);
        return sw_fail(err, SW_ERR_NOMEM, "segmentation: out of host memory");
    }
    for (int i = 0; i < batch; i++) {
        double sc, shift;
        window_affine(m, span + offsets[i], samples, &sc, &shift);
        scale[i] = (float)sc;
        first[i] = offsets[i] / SEG_SINC_STRIDE;
        for (int c = 0; c < SEG_SINC_FILTERS; c++)
            shifts[(int64_t)i * SEG_SINC_FILTERS + c] = (float)(shift * m->sinc_sum[c]);
    }
    /* the span's convolution once, then every window's stretch of it */
    int64_t t_conv = sw_window_frames(samples, SEG_SINC_TAPS, SEG_SINC_STRIDE);
    sw_tensor up = {0}, whole = {0}, y = {0};
    const sw_tensor *wave = on_device ? on_device : &up;
    if ((on_device || upload_span(m, span, span_samples, &up, err) == SW_OK) &&
        span_conv(m, wave, span_samples, &whole, err) == SW_OK &&
        pooled_windows(m, &whole, first, scale, shifts, batch, t_conv, &y, err) == SW_OK) {
        sw_tensor_free(&whole);
        sw_tensor_free(&up);
        if (sw_instance_norm(&y, &m->norm_w[0], &m->norm_b[0], SEG_NORM_EPS, &y, err) == SW_OK &&
            sw_leaky_relu(&y, SEG_LEAKY_SLOPE, &y, err) == SW_OK)
            forward_tail(m, &y, out, err);
    }
    sw_tensor_free(&up);
    free(shifts);
    free(scale);
    free(first);
    sw_tensor_free(&whole);
    sw_tensor_free(&y);
    return err->code;
}
