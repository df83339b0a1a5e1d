/* The GE2E forward and its weights: three LSTM layers over the whole batch on
 * the backend, one gather of each item's last valid frame, the linear layer,
 * ReLU and L2 normalisation there too; only the 256 values per item come
 * back. */
#include "model_object.h"
#include "ge2e.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ge2e_internal.h"
#include "ops.h"

static void free_weights(sw_model_object *o)
{
    sw_ge2e *m = (sw_ge2e *)o;
    for (int l = 0; l < GE2E_LAYERS; l++) {
        sw_model_object_free_weight(&m->obj, &m->w_ih[l]);
        sw_model_object_free_weight(&m->obj, &m->w_hh[l]);
        sw_model_object_free_weight(&m->obj, &m->bias[l]);
    }
    sw_model_object_free_weight(&m->obj, &m->lin_w);
    sw_model_object_free_weight(&m->obj, &m->lin_b);
    sw_model_object_free_weight(&m->obj, &m->mel_banks);
}

static const sw_model_kind kind = {"GE2E", "sw_ge2e_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_ge2e, sw_ge2e)

sw_status sw_ge2e_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                         sw_ge2e **out, sw_error *err)
{
    *out = NULL;
    sw_ge2e *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    sw_weight_source ws = sw_weight_source_make(be, tensors, n_tensors, "GE2E weights", err);
    const int64_t h4 = 4 * GE2E_HIDDEN;
    char name[64];
    float *sum = malloc((size_t)h4 * sizeof *sum);
    if (!sum)
        sw_fail(err, SW_ERR_NOMEM, "GE2E: out of host memory");
    for (int l = 0; l < GE2E_LAYERS; l++) {
        int64_t in = l == 0 ? SW_GE2E_MELS : GE2E_HIDDEN;
        /* one direction: the backend's LSTM takes [D, 4H, in] */
        snprintf(name, sizeof name, "lstm.weight_ih_l%d", l);
        const float *w = sw_weights_host_f32(&ws, name, sw_shape2(h4, in));
        if (w)
            sw_weights_upload(&ws, w, sw_shape3(1, h4, in), &m->w_ih[l]);
        snprintf(name, sizeof name, "lstm.weight_hh_l%d", l);
        w = sw_weights_host_f32(&ws, name, sw_shape2(h4, GE2E_HIDDEN));
        if (w)
            sw_weights_upload(&ws, w, sw_shape3(1, h4, GE2E_HIDDEN), &m->w_hh[l]);
        snprintf(name, sizeof name, "lstm.bias_ih_l%d", l);
        const float *b_ih = sw_weights_host_f32(&ws, name, sw_shape1(h4));
        snprintf(name, sizeof name, "lstm.bias_hh_l%d", l);
        const float *b_hh = sw_weights_host_f32(&ws, name, sw_shape1(h4));
        if (b_ih && b_hh) {
            for (int64_t i = 0; i < h4; i++)
                sum[i] = b_ih[i] + b_hh[i];
            sw_weights_upload(&ws, sum, sw_shape2(1, h4), &m->bias[l]);
        }
    }
    free(sum);
    sw_weights_load(&ws, &m->lin_w, "linear.weight", sw_shape2(GE2E_HIDDEN, GE2E_HIDDEN));
    sw_weights_load(&ws, &m->lin_b, "linear.bias", sw_shape1(GE2E_HIDDEN));
    if (err->code == SW_OK)
        ge2e_load_mel_banks(m, err);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_ge2e_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}

/* The LSTM stack over x (the uploaded mels, left alone), then each row's
 * state at its last frame (ids, uploaded with them) through the linear
 * layer, ReLU and L2 norm; with `owners` ([groups, n], one-hot rows, also
 * uploaded with them) each group's sum of its rows, L2-normalised. Down in
 * one copy. */
sw_status ge2e_forward(sw_ge2e *m, const sw_tensor *mels, const sw_tensor *ids,
                       const sw_tensor *owners, int n, int64_t frames, float *out, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int64_t shape[3] = {n, frames, GE2E_HIDDEN};
    sw_tensor x = {0};
    for (int l = 0; l < GE2E_LAYERS && err->code == SW_OK; l++) {
        sw_tensor y = {0};
        if (sw_tensor_new(be, SW_F32, 3, shape, &y, err) == SW_OK)
            sw_lstm(l == 0 ? mels : &x, &m->w_ih[l], &m->w_hh[l], &m->bias[l], &y, err);
        sw_tensor_free(&x);
        x = y;
    }
    sw_tensor last = {0}, emb = {0}, pooled = {0};
    int64_t two[2] = {n, GE2E_HIDDEN}, groups[2] = {owners ? owners->shape[0] : 0, GE2E_HIDDEN};
    sw_tensor table = x;
    table.ndim = 2;
    table.shape[0] = (int64_t)n * frames;
    table.shape[1] = GE2E_HIDDEN;
    if (err->code == SW_OK && sw_tensor_new(be, SW_F32, 2, two, &last, err) == SW_OK &&
        sw_gather_rows(&table, ids, &last, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, two, &emb, err) == SW_OK &&
        sw_matmul(&last, &m->lin_w, &emb, 1, 1.0f, 0.0f, err) == SW_OK &&
        sw_add(&emb, &m->lin_b, &emb, err) == SW_OK &&
        sw_leaky_relu(&emb, 0.0f, &emb, err) == SW_OK &&
        sw_l2_normalize(&emb, 1e-12f, &emb, err) == SW_OK) {
        if (!owners)
            be->download(be, out, emb.data, (size_t)n * GE2E_HIDDEN * sizeof *out, err);
        else if (sw_tensor_new(be, SW_F32, 2, groups, &pooled, err) == SW_OK &&
                 sw_matmul(owners, &emb, &pooled, 0, 1.0f, 0.0f, err) == SW_OK &&
                 sw_l2_normalize(&pooled, 1e-12f, &pooled, err) == SW_OK)
            be->download(be, out, pooled.data, sw_tensor_nbytes(&pooled), err);
    }
    sw_tensor_free(&x);
    sw_tensor_free(&last);
    sw_tensor_free(&emb);
    sw_tensor_free(&pooled);
    return err->code;
}

/* The call's one copy up: the mels, then (each from a 256-byte boundary)
 * each row's last frame as an int32 row id and, with owners, the [groups,
 * n] one-hot matrix of which group each row sums into; views of `up`. */
static sw_status upload(sw_ge2e *m, const float *mel, int n, int64_t frames, const int64_t *lengths,
                        const int32_t *owners, int groups, sw_tensor *up, sw_tensor *mels,
                        sw_tensor *ids, sw_tensor *one_hot, sw_error *err)
{
    int64_t n_mel = (int64_t)n * frames * SW_GE2E_MELS, at = (n_mel + 63) / 64 * 64;
    int64_t at_owners = (at + n + 63) / 64 * 64;
    /* floats; the ids are int32, the same size */
    int64_t total = owners ? at_owners + (int64_t)groups * n : at + n;
    char *host = calloc((size_t)total, sizeof(float));
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "GE2E: out of host memory");
    memcpy(host, mel, (size_t)n_mel * sizeof(float));
    for (int i = 0; i < n; i++) {
        int32_t id = (int32_t)(i * frames + (lengths ? lengths[i] : frames) - 1);
        memcpy(host + (at + i) * sizeof(float), &id, sizeof id);
    }
    const float one = 1.0f;
    for (int i = 0; owners && i < n; i++)
        memcpy(host + (at_owners + (int64_t)owners[i] * n + i) * sizeof(float), &one, sizeof one);
    if (sw_tensor_new(m->obj.be, SW_F32, 1, &total, up, err) == SW_OK &&
        m->obj.be->upload(m->obj.be, up->data, host, sw_tensor_nbytes(up), err) == SW_OK) {
        *mels = sw_tensor_slice(up, 0, 3, n, frames, SW_GE2E_MELS);
        *ids = sw_tensor_slice(up, at, 1, n, 0, 0);
        ids->dtype = SW_I32;
        if (owners)
            *one_hot = sw_tensor_slice(up, at_owners, 2, groups, n, 0);
    }
    free(host);
    return err->code;
}

static sw_status run(sw_ge2e *m, const float *mels, int n, int64_t frames, const int64_t *lengths,
                     const int32_t *owners, int groups, float *out, sw_error *err)
{
    if (!m || !mels || !out || n < 1)
        return sw_fail(err, SW_ERR_ARG, "GE2E: model, mels and out needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    if (frames < 1 || (int64_t)n * frames > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "GE2E: %d x %lld frames: none, or too many", n,
                       (long long)frames);
    for (int i = 0; lengths && i < n; i++)
        if (lengths[i] < 1 || lengths[i] > frames)
            return sw_fail(err, SW_ERR_ARG, "GE2E: item %d has length %lld, not 1 to %lld", i,
                           (long long)lengths[i], (long long)frames);
    for (int i = 0; owners && i < n; i++)
        if (owners[i] < 0 || owners[i] >= groups)
            return sw_fail(err, SW_ERR_ARG, "GE2E: item %d belongs to group %d, not 0 to %d", i,
                           owners[i], groups - 1);
    sw_tensor up = {0}, x = {0}, ids = {0}, one_hot = {0};
    if (upload(m, mels, n, frames, lengths, owners, groups, &up, &x, &ids, &one_hot, err) == SW_OK)
        ge2e_forward(m, &x, &ids, owners ? &one_hot : NULL, n, frames, out, err);
    sw_tensor_free(&up);
    return err->code;
}

sw_status sw_ge2e_run(sw_ge2e *m, const float *mels, int n, int64_t frames, const int64_t *lengths,
                      float *out, sw_error *err)
{
    return run(m, mels, n, frames, lengths, NULL, 0, out, err);
}

sw_status sw_ge2e_run_pooled(sw_ge2e *m, const float *mels, int n, int64_t frames,
                             const int64_t *lengths, const int32_t *owners, int groups, float *out,
                             sw_error *err)
{
    if (!owners || groups < 1)
        return sw_fail(err, SW_ERR_ARG, "GE2E: owners and at least one group needed");
    return run(m, mels, n, frames, lengths, owners, groups, out, err);
}
