/* Silero VAD v6: its weights and its forward (silero.h). The STFT (a
 * convolution with the Fourier basis), its magnitudes, the convolutions of a
 * batch of windows, the LSTM over them and the decoder run on the backend: a
 * batch copies its windows up and its logits down, and the LSTM's state stays
 * on the device from batch to batch (and call to call, when resumed), so
 * memory is one batch's whatever the recording's length.
 *
 * The exported network drops the first of each window's five STFT frames, so
 * the samples only that frame reads (the first 128) are never uploaded, nor
 * the last 64, which no frame reads. */
#include "model_object.h"
#include "silero.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

#define SILERO_CONTEXT 64
#define SILERO_PAD     128
#define SILERO_INPUT   (SILERO_CONTEXT + SW_SILERO_WINDOW + 2 * SILERO_PAD) /* 832 */
#define SILERO_TAPS    256
#define SILERO_HOP     128
#define SILERO_FRAMES  5 /* STFT frames per window; the first is dropped */
#define SILERO_READ    (SILERO_HOP * (SILERO_FRAMES - 2) + SILERO_TAPS) /* 640 samples */
#define SILERO_BINS    129
#define SILERO_HIDDEN  128
#define SILERO_CONVS   4

static const int conv_in[SILERO_CONVS] = {SILERO_BINS, 128, 64, 64};
static const int conv_out[SILERO_CONVS] = {128, 64, 64, SILERO_HIDDEN};
static const int conv_stride[SILERO_CONVS] = {1, 2, 2, 1};

struct sw_silero {
    sw_model_object obj; /* first: model_object.h */
    sw_tensor basis;     /* [258, 1, 256] */
    sw_tensor conv_w[SILERO_CONVS], conv_b[SILERO_CONVS];
    sw_tensor w_ih, w_hh, bias;
    sw_tensor dec_w, dec_b; /* [1, 128], [1] */
    sw_tensor state;        /* [2, 1, 1, 128]: the LSTM's h and c after the last window */
    sw_tensor zero;         /* the same shape, zeros: a fresh state without a copy from the host */
    float context[SILERO_CONTEXT]; /* the samples before the next call's first window */
    /* whose state and context these are: the recording of the last call, 0
     * while none can be resumed (a new model, or a call failed part-way) */
    uint64_t recording;
    int failed; /* the last call failed part-way: what a refused resume says */
};

static void free_weights(sw_model_object *o)
{
    sw_silero *m = (sw_silero *)o;
    sw_tensor *all[] = {&m->basis, &m->w_ih,  &m->w_hh,  &m->bias,
                        &m->dec_w, &m->dec_b, &m->state, &m->zero};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_model_object_free_weight(&m->obj, all[i]);
    for (int i = 0; i < SILERO_CONVS; i++) {
        sw_model_object_free_weight(&m->obj, &m->conv_w[i]);
        sw_model_object_free_weight(&m->obj, &m->conv_b[i]);
    }
}

static const sw_model_kind kind = {"Silero VAD", "sw_silero_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_silero, sw_silero)

sw_status sw_silero_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                           sw_silero **out, sw_error *err)
{
    *out = NULL;
    sw_silero *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    sw_weight_source ws = sw_weight_source_make(be, tensors, n_tensors, "Silero VAD weights", err);
    sw_weights_load(&ws, &m->basis, "encoder.feature_extractor.forward_basis_buffer",
                    sw_shape3(2 * SILERO_BINS, 1, SILERO_TAPS));
    char name[64];
    for (int i = 0; i < SILERO_CONVS; i++) {
        snprintf(name, sizeof name, "encoder.conv_layers.%d.weight", i);
        sw_weights_load(&ws, &m->conv_w[i], name, sw_shape3(conv_out[i], conv_in[i], 3));
        snprintf(name, sizeof name, "encoder.conv_layers.%d.bias", i);
        sw_weights_load(&ws, &m->conv_b[i], name, sw_shape1(conv_out[i]));
    }
    const int64_t h4 = 4 * SILERO_HIDDEN;
    sw_weights_load(&ws, &m->w_ih, "lstm.w_ih", sw_shape3(1, h4, SILERO_HIDDEN));
    sw_weights_load(&ws, &m->w_hh, "lstm.w_hh", sw_shape3(1, h4, SILERO_HIDDEN));
    sw_weights_load(&ws, &m->bias, "lstm.bias", sw_shape2(1, h4));
    const float *dec =
        sw_weights_host_f32(&ws, "decoder.conv1d.weight", sw_shape3(1, SILERO_HIDDEN, 1));
    if (dec)
        sw_weights_upload(&ws, dec, sw_shape2(1, SILERO_HIDDEN), &m->dec_w);
    sw_weights_load(&ws, &m->dec_b, "decoder.conv1d.bias", sw_shape1(1));
    int64_t state_shape[4] = {2, 1, 1, SILERO_HIDDEN};
    float zeros[2 * SILERO_HIDDEN] = {0};
    if (err->code == SW_OK && sw_tensor_new(be, SW_F32, 4, state_shape, &m->zero, err) == SW_OK &&
        be->upload(be, m->zero.data, zeros, sizeof zeros, err) == SW_OK)
        sw_tensor_new(be, SW_F32, 4, state_shape, &m->state, err);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_silero_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}

/* Windows first .. first + n - 1 of the audio as the network reads them:
 * context (the 64 samples before: `context` for the first window of audio),
 * window, reflect padding (NumPy's "reflect": the edge not repeated), then of
 * those 832 samples the SILERO_READ that STFT frames 1..4 read. */
static void windows(const float *audio, const float *context, int64_t first, int64_t n, float *out)
{
    float w[SILERO_CONTEXT + SW_SILERO_WINDOW], o[SILERO_INPUT];
    const int len = SILERO_CONTEXT + SW_SILERO_WINDOW;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = (first + i) * SW_SILERO_WINDOW;
        memcpy(w, start == 0 ? context : audio + start - SILERO_CONTEXT,
               SILERO_CONTEXT * sizeof *w);
        memcpy(w + SILERO_CONTEXT, audio + start, SW_SILERO_WINDOW * sizeof *w);
        for (int j = 0; j < SILERO_PAD; j++) {
            o[j] = w[SILERO_PAD - j];
            o[SILERO_PAD + len + j] = w[len - 2 - j];
        }
        memcpy(o + SILERO_PAD, w, len * sizeof *w);
        memcpy(out + i * SILERO_READ, o + SILERO_HOP, SILERO_READ * sizeof *o);
    }
}

/* The encoder of n windows -> feat [n, 128] (a view into the features). */
static sw_status encode(sw_silero *m, const float *host_windows, int64_t n, sw_tensor *feat,
                        sw_error *err)
{
    sw_backend *be = m->obj.be;
    const int64_t kept = SILERO_FRAMES - 1;
    sw_tensor x = {0}, spec = {0}, mag = {0}, a = {0}, b = {0};
    int64_t x_shape[3] = {n, SILERO_READ, 1}, spec_shape[3] = {n, kept, 2 * SILERO_BINS};
    int64_t mag_shape[3] = {n, kept, SILERO_BINS};
    /* the STFT of frames 1..4 and their magnitudes */
    if (sw_tensor_new(be, SW_F32, 3, x_shape, &x, err) == SW_OK &&
        be->upload(be, x.data, host_windows, sw_tensor_nbytes(&x), err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 3, spec_shape, &spec, err) == SW_OK &&
        sw_conv1d(&x, &m->basis, NULL, SILERO_HOP, 0, &spec, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 3, mag_shape, &mag, err) == SW_OK)
        sw_magnitude(&spec, &mag, err);
    sw_tensor_free(&x);
    sw_tensor_free(&spec);
    /* four convolutions with ReLU: 4 frames -> 4, 2, 1, 1 */
    sw_tensor in = mag;
    int64_t frames = SILERO_FRAMES - 1;
    for (int i = 0; i < SILERO_CONVS && err->code == SW_OK; i++) {
        frames = (frames - 1) / conv_stride[i] + 1;
        sw_tensor *dst = i % 2 == 0 ? &a : &b;
        int64_t shape[3] = {n, frames, conv_out[i]};
        sw_tensor out;
        if (i == SILERO_CONVS - 1) {
            out = sw_tensor_slice(feat, 0, 3, n, 1, SILERO_HIDDEN);
        } else {
            sw_tensor_free(dst);
            if (sw_tensor_new(be, SW_F32, 3, shape, dst, err) != SW_OK)
                break;
            out = *dst;
        }
        if (sw_conv1d(&in, &m->conv_w[i], &m->conv_b[i], conv_stride[i], 1, &out, err) == SW_OK)
            sw_leaky_relu(&out, 0.0f, &out, err);
        in = out;
    }
    if (err->code == SW_OK && frames != 1)
        sw_fail(err, SW_ERR_MODEL, "Silero VAD: the encoder gave %lld frames, not 1",
                (long long)frames);
    sw_tensor_free(&mag);
    sw_tensor_free(&a);
    sw_tensor_free(&b);
    return err->code;
}

/* A fresh recording: zero context and LSTM state. */
static sw_status reset(sw_silero *m, sw_error *err)
{
    memset(m->context, 0, sizeof m->context);
    return sw_scale(&m->zero, 1.0f, &m->state, err); /* on the device: no copy up */
}

/* Windows first .. first + k - 1: encoder, LSTM from the carried state,
 * decoder; k logits into probs (host). feat, h and logits hold a batch. */
static sw_status run_batch(sw_silero *m, const float *audio, int64_t first, int64_t k, float *host,
                           sw_tensor *feat, sw_tensor *h, sw_tensor *logits, float *probs,
                           sw_error *err)
{
    sw_backend *be = m->obj.be;
    windows(audio, m->context, first, k, host);
    sw_tensor rows = sw_tensor_slice(feat, 0, 2, k, SILERO_HIDDEN, 0);
    sw_tensor seq = sw_tensor_slice(feat, 0, 3, 1, k, SILERO_HIDDEN);
    sw_tensor out = sw_tensor_slice(h, 0, 3, 1, k, SILERO_HIDDEN);
    sw_tensor h2 = sw_tensor_slice(h, 0, 2, k, SILERO_HIDDEN, 0);
    sw_tensor l = sw_tensor_slice(logits, 0, 2, k, 1, 0);
    if (encode(m, host, k, &rows, err) == SW_OK &&
        sw_lstm_carry(&seq, &m->w_ih, &m->w_hh, &m->bias, &m->state, &out, err) == SW_OK &&
        sw_leaky_relu(&out, 0.0f, &out, err) == SW_OK &&
        sw_matmul(&h2, &m->dec_w, &l, 1, 1.0f, 0.0f, err) == SW_OK &&
        sw_add(&l, &m->dec_b, &l, err) == SW_OK)
        be->download(be, probs, l.data, (size_t)k * sizeof *probs, err);
    return err->code;
}

/* Whether `recording` may go on from the model's state (silero.h). */
static sw_status check_resume(const sw_silero *m, uint64_t recording, sw_error *err)
{
    if (m->recording == recording)
        return SW_OK;
    if (m->failed)
        return sw_fail(err, SW_ERR_ARG,
                       "Silero VAD: cannot resume: the previous call failed, its state may be "
                       "half-updated; run the recording again from its start");
    if (m->recording == 0)
        return sw_fail(err, SW_ERR_ARG,
                       "Silero VAD: nothing to resume: no recording has run on this model");
    return sw_fail(err, SW_ERR_ARG,
                   "Silero VAD: cannot resume: another recording ran on this model since this "
                   "one's last piece; run it again from its start");
}

sw_status sw_silero_run(sw_silero *m, const float *audio, int64_t n_samples, int batch,
                        uint64_t recording, int resume, float *probs, sw_error *err)
{
    if (!m || (!audio && n_samples) || (!probs && n_samples) || batch < 1 || recording == 0)
        return sw_fail(err, SW_ERR_ARG, "Silero VAD: model, audio, probs and a recording needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    if (n_samples < 0 || n_samples % SW_SILERO_WINDOW)
        return sw_fail(err, SW_ERR_ARG, "Silero VAD: %lld samples, not a multiple of %d",
                       (long long)n_samples, SW_SILERO_WINDOW);
    if ((int64_t)batch * SILERO_FRAMES * 2 * SILERO_BINS * 4 > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "Silero VAD: a batch of %d windows is too large", batch);
    if (resume && check_resume(m, recording, err) != SW_OK)
        return err->code;
    /* from here the state may change: only success makes it resumable */
    m->recording = 0;
    m->failed = 1;
    if (!resume && reset(m, err) != SW_OK)
        return err->code;
    int64_t n = n_samples / SW_SILERO_WINDOW;
    if (n == 0) {
        m->recording = recording;
        m->failed = 0;
        return SW_OK;
    }
    sw_backend *be = m->obj.be;
    int64_t piece = batch < n ? batch : n;
    int64_t f_shape[2] = {piece, SILERO_HIDDEN}, l_shape[2] = {piece, 1};
    sw_tensor feat = {0}, h = {0}, logits = {0};
    float *host = malloc((size_t)piece * SILERO_READ * sizeof *host);
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "Silero VAD: out of host memory");
    if (sw_tensor_new(be, SW_F32, 2, f_shape, &feat, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, f_shape, &h, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, l_shape, &logits, err) == SW_OK)
        for (int64_t i = 0; i < n && err->code == SW_OK; i += piece) {
            int64_t k = n - i < piece ? n - i : piece;
            run_batch(m, audio, i, k, host, &feat, &h, &logits, probs + i, err);
        }
    free(host);
    sw_tensor_free(&feat);
    sw_tensor_free(&h);
    sw_tensor_free(&logits);
    if (err->code != SW_OK)
        return err->code; /* the state is part-way: check_resume refuses to go on from it */
    memcpy(m->context, audio + n_samples - SILERO_CONTEXT, sizeof m->context);
    m->recording = recording;
    m->failed = 0;
    for (int64_t i = 0; i < n; i++)
        probs[i] = 1.0f / (1.0f + expf(-probs[i]));
    return SW_OK;
}
