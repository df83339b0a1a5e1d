/* Building the segmentation model from named host arrays (the shared loader,
 * named_tensors.h, checks and uploads each one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segmentation_internal.h"

/* Finds `name` (shape given by ndim and d0..d2) and uploads it. */
static sw_status load(sw_weight_source *ws, sw_tensor *dst, const char *name, int ndim, int64_t d0,
                      int64_t d1, int64_t d2)
{
    sw_shape want = {ndim, {d0, d1, d2, 0}};
    return sw_weights_load(ws, dst, name, want);
}

static void free_tensor(const sw_segmentation *m, sw_tensor *t)
{
    sw_model_object_free_weight(&m->obj, t);
}

static void free_weights(sw_model_object *o)
{
    sw_segmentation *m = (sw_segmentation *)o;
    sw_tensor *all[] = {&m->wav_norm_w, &m->wav_norm_b, &m->cls_w, &m->cls_b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free_tensor(m, all[i]);
    for (int i = 0; i < 3; i++) {
        free_tensor(m, &m->conv_w[i]);
        free_tensor(m, &m->conv_b[i]);
        free_tensor(m, &m->norm_w[i]);
        free_tensor(m, &m->norm_b[i]);
    }
    for (int i = 0; i < SEG_LSTM_LAYERS; i++) {
        free_tensor(m, &m->lstm_ih[i]);
        free_tensor(m, &m->lstm_hh[i]);
        free_tensor(m, &m->lstm_b[i]);
    }
    for (int i = 0; i < 2; i++) {
        free_tensor(m, &m->lin_w[i]);
        free_tensor(m, &m->lin_b[i]);
    }
}

static const sw_model_kind kind = {"segmentation", "sw_segmentation_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_segmentation, sw_segmentation)

/* What sw_segmentation_run_span computes on the host: the waveform norm's
 * gamma and beta, and the sum of each sinc filter's taps. */
static sw_status host_copies(sw_segmentation *m, sw_error *err)
{
    float pair[2], *w = malloc(SEG_SINC_FILTERS * SEG_SINC_TAPS * sizeof *w);
    if (!w)
        return sw_fail(err, SW_ERR_NOMEM, "segmentation: out of host memory");
    if (m->obj.be->download(m->obj.be, pair, m->wav_norm_w.data, sizeof(float), err) == SW_OK &&
        m->obj.be->download(m->obj.be, pair + 1, m->wav_norm_b.data, sizeof(float), err) == SW_OK &&
        m->obj.be->download(m->obj.be, w, m->conv_w[0].data, sw_tensor_nbytes(&m->conv_w[0]),
                            err) == SW_OK) {
        m->wav_gamma = pair[0];
        m->wav_beta = pair[1];
        for (int c = 0; c < SEG_SINC_FILTERS; c++) {
            double sum = 0.0;
            for (int k = 0; k < SEG_SINC_TAPS; k++)
                sum += w[c * SEG_SINC_TAPS + k];
            m->sinc_sum[c] = sum;
        }
    }
    free(w);
    return err->code;
}

sw_status sw_segmentation_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                                 sw_segmentation **out, sw_error *err)
{
    *out = NULL;
    sw_segmentation *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    sw_weight_source ld =
        sw_weight_source_make(be, tensors, n_tensors, "segmentation weights", err);
    const int64_t h = SEG_LSTM_HIDDEN, ch = SEG_CONV_CHANNELS;
    load(&ld, &m->wav_norm_w, "sincnet.wav_norm1d.weight", 1, 1, 0, 0);
    load(&ld, &m->wav_norm_b, "sincnet.wav_norm1d.bias", 1, 1, 0, 0);
    load(&ld, &m->conv_w[0], "sincnet.conv1d.0.weight", 3, SEG_SINC_FILTERS, 1, SEG_SINC_TAPS);
    char name[64];
    for (int i = 0; i < 3; i++) {
        int64_t c = i == 0 ? SEG_SINC_FILTERS : ch;
        if (i > 0) {
            snprintf(name, sizeof name, "sincnet.conv1d.%d.weight", i);
            load(&ld, &m->conv_w[i], name, 3, ch, i == 1 ? SEG_SINC_FILTERS : ch, SEG_CONV_TAPS);
            snprintf(name, sizeof name, "sincnet.conv1d.%d.bias", i);
            load(&ld, &m->conv_b[i], name, 1, ch, 0, 0);
        }
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        load(&ld, &m->norm_w[i], name, 1, c, 0, 0);
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        load(&ld, &m->norm_b[i], name, 1, c, 0, 0);
    }
    for (int i = 0; i < SEG_LSTM_LAYERS; i++) {
        int64_t in = i == 0 ? ch : 2 * h;
        snprintf(name, sizeof name, "lstm.%d.weight_ih", i);
        load(&ld, &m->lstm_ih[i], name, 3, 2, 4 * h, in);
        snprintf(name, sizeof name, "lstm.%d.weight_hh", i);
        load(&ld, &m->lstm_hh[i], name, 3, 2, 4 * h, h);
        snprintf(name, sizeof name, "lstm.%d.bias", i);
        load(&ld, &m->lstm_b[i], name, 2, 2, 4 * h, 0);
    }
    load(&ld, &m->lin_w[0], "linear.0.weight", 2, SEG_LINEAR, 2 * h, 0);
    load(&ld, &m->lin_b[0], "linear.0.bias", 1, SEG_LINEAR, 0, 0);
    load(&ld, &m->lin_w[1], "linear.1.weight", 2, SEG_LINEAR, SEG_LINEAR, 0);
    load(&ld, &m->lin_b[1], "linear.1.bias", 1, SEG_LINEAR, 0, 0);
    load(&ld, &m->cls_w, "classifier.weight", 2, SW_SEG_CLASSES, SEG_LINEAR, 0);
    load(&ld, &m->cls_b, "classifier.bias", 1, SW_SEG_CLASSES, 0, 0);
    if (err->code == SW_OK)
        host_copies(m, err);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_segmentation_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}
