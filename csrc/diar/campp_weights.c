/* Building CAM++ from named host arrays through the shared loader
 * (named_tensors.h). The mask's last layer is widened here (see campp.c), and the
 * final linear layer stays on the host, where the pooled statistics are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campp_internal.h"

const int campp_block_layers[CAMPP_BLOCKS] = {12, 24, 16};
const int campp_block_dilation[CAMPP_BLOCKS] = {1, 2, 2};

typedef sw_weight_source loader;

static sw_shape shape_of(int64_t d0, int64_t d1)
{
    return d1 ? sw_shape2(d0, d1) : sw_shape1(d0);
}

/* The float32 host data of `name`, shape [d0] or [d0, d1] (d1 = 0). */
static const float *find(loader *ld, const char *name, int64_t d0, int64_t d1)
{
    return sw_weights_host_f32(ld, name, shape_of(d0, d1));
}

static void upload_host(loader *ld, const float *data, int ndim, int64_t d0, int64_t d1,
                        sw_tensor *dst)
{
    sw_weights_upload(ld, data, ndim == 2 ? sw_shape2(d0, d1) : sw_shape1(d0), dst);
}

static void load(loader *ld, sw_tensor *dst, const char *name, int64_t d0, int64_t d1)
{
    sw_weights_load(ld, dst, name, shape_of(d0, d1));
}

/* w in the layout the backend's gather_linear reads fastest: on the CPU a
 * narrow layer's transpose, [in, out], once here instead of on every call. */
static void narrow_layout(loader *ld, campp_linear *l)
{
    sw_prepare_linear(ld->be, &l->w, &l->layout, ld->err);
}

/* prefix.weight [out, in] and, when `bias`, prefix.bias [out] */
static void load_linear(loader *ld, campp_linear *l, const char *prefix, int64_t out, int64_t in,
                        int bias)
{
    char name[128];
    snprintf(name, sizeof name, "%s.weight", prefix);
    load(ld, &l->w, name, out, in);
    if (bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        load(ld, &l->b, name, out, 0);
    }
    narrow_layout(ld, l);
}

/* A 3x3 convolution also gets the weight the backend's conv3x3 reads (on
 * the CPU Winograd's transform; the strided form's for stride 2 along the
 * rows). */
static void winograd_layout(loader *ld, campp_linear *l, int strided)
{
    if (ld->err->code == SW_OK)
        sw_prepare_conv3x3(ld->be, &l->w, l->layout, strided ? 2 : 1, &l->u, ld->err);
}

/* The first layer, one channel in: [C, 9] as loaded, transposed here to the
 * [9, C] that conv3x3_single reads on every backend. */
static void load_single_channel(loader *ld, campp_linear *l, const char *prefix, int64_t c)
{
    char name[128];
    snprintf(name, sizeof name, "%s.weight", prefix);
    const float *w = find(ld, name, c, 9);
    if (!w)
        return;
    float *t = malloc((size_t)(9 * c) * sizeof *t);
    if (!t) {
        sw_fail(ld->err, SW_ERR_NOMEM, "CAM++: out of host memory");
        return;
    }
    for (int64_t k = 0; k < 9; k++)
        for (int64_t o = 0; o < c; o++)
            t[k * c + o] = w[o * 9 + k];
    upload_host(ld, t, 2, 9, c, &l->w);
    free(t);
    l->layout = SW_LAYOUT_IN_OUT;
    snprintf(name, sizeof name, "%s.bias", prefix);
    load(ld, &l->b, name, c, 0);
}

/* CAM++ runs on the backend's fused entries only (campp.c): a backend that
 * lacks one for CAM++'s sizes is refused before a weight is read. */
static sw_status fused_entries(sw_backend *be, sw_error *err)
{
    const int64_t c = CAMPP_HEAD_CHANNELS;
    const char *lacking = !sw_supports(be, SW_CAP_GATHER_LINEAR, 0, CAMPP_GROWTH) ? "gather_linear"
                          : !sw_supports(be, SW_CAP_CONV3X3, c, c)                ? "conv3x3"
                          : !sw_supports(be, SW_CAP_CONV3X3_SINGLE, 1, c)         ? "conv3x3_single"
                          : !sw_supports(be, SW_CAP_AFFINE_RELU_ROWS, 0, 0) ? "affine_relu_rows"
                                                                            : NULL;
    if (lacking)
        return sw_fail(err, SW_ERR_DEVICE,
                       "CAM++ needs the backend's %s entry, which the %s backend does not have",
                       lacking, be->name);
    return SW_OK;
}

static void load_affine(loader *ld, campp_affine *a, const char *prefix, int64_t c)
{
    char name[128];
    snprintf(name, sizeof name, "%s.scale", prefix);
    load(ld, &a->scale, name, c, 0);
    snprintf(name, sizeof name, "%s.shift", prefix);
    load(ld, &a->shift, name, c, 0);
}

/* The mask is sigmoid(z) for z = w c + b, and the backend has no sigmoid:
 * sigmoid(z) = softmax([z, 0])[0], so the layer is widened to emit each
 * logit beside a zero (rows 2j and 2j + 1) and the forward takes a softmax
 * over pairs. */
static void load_mask_logits(loader *ld, campp_linear *l, const char *prefix)
{
    char name[128];
    snprintf(name, sizeof name, "%s.weight", prefix);
    const float *ws = find(ld, name, CAMPP_GROWTH, CAMPP_CTX_CHANNELS);
    snprintf(name, sizeof name, "%s.bias", prefix);
    const float *bs = find(ld, name, CAMPP_GROWTH, 0);
    if (!ws || !bs)
        return;
    float *wide = calloc((size_t)2 * CAMPP_GROWTH * (CAMPP_CTX_CHANNELS + 1), sizeof *wide);
    if (!wide) {
        sw_fail(ld->err, SW_ERR_NOMEM, "CAM++: out of host memory");
        return;
    }
    float *wide_b = wide + 2 * CAMPP_GROWTH * CAMPP_CTX_CHANNELS;
    for (int j = 0; j < CAMPP_GROWTH; j++) {
        memcpy(wide + (size_t)2 * j * CAMPP_CTX_CHANNELS, ws + (size_t)j * CAMPP_CTX_CHANNELS,
               CAMPP_CTX_CHANNELS * sizeof *wide);
        wide_b[2 * j] = bs[j];
    }
    upload_host(ld, wide, 2, 2 * CAMPP_GROWTH, CAMPP_CTX_CHANNELS, &l->w);
    upload_host(ld, wide_b, 1, 2 * CAMPP_GROWTH, 0, &l->b);
    free(wide);
    narrow_layout(ld, l);
}

static void free_tensor(const sw_campp *m, sw_tensor *t)
{
    sw_model_object_free_weight(&m->obj, t);
}

static void free_linear(const sw_campp *m, campp_linear *l)
{
    free_tensor(m, &l->w);
    free_tensor(m, &l->b);
    free_tensor(m, &l->u);
}

static void free_affine(const sw_campp *m, campp_affine *a)
{
    free_tensor(m, &a->scale);
    free_tensor(m, &a->shift);
}

static void free_weights(sw_model_object *o)
{
    sw_campp *m = (sw_campp *)o;
    free_linear(m, &m->head_conv1);
    free_linear(m, &m->head_conv2);
    for (int i = 0; i < CAMPP_RES_BLOCKS; i++) {
        free_linear(m, &m->res[i][0]);
        free_linear(m, &m->res[i][1]);
    }
    free_linear(m, &m->res_short[0]);
    free_linear(m, &m->res_short[1]);
    free_linear(m, &m->tdnn);
    for (int i = 0; i < CAMPP_LAYERS; i++) {
        campp_layer *l = &m->layers[i];
        free_affine(m, &l->norm);
        free_linear(m, &l->bottle);
        free_linear(m, &l->local);
        free_linear(m, &l->ctx_in);
        free_linear(m, &l->ctx_out);
    }
    for (int i = 0; i < CAMPP_BLOCKS; i++) {
        free_affine(m, &m->transit_norm[i]);
        free_linear(m, &m->transit[i]);
    }
    free_linear(m, &m->dense);
    free_tensor(m, &m->mel_banks);
    free_tensor(m, &m->chunk_ids);
}

static const sw_model_kind kind = {"CAM++", "sw_campp_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_campp, sw_campp)

static void load_head(loader *ld, sw_campp *m)
{
    const int64_t c = CAMPP_HEAD_CHANNELS;
    char name[96];
    load_single_channel(ld, &m->head_conv1, "head.conv1", c);
    for (int i = 0; i < CAMPP_RES_BLOCKS; i++) {
        const char *block[CAMPP_RES_BLOCKS] = {"layer1.0", "layer1.1", "layer2.0", "layer2.1"};
        for (int k = 0; k < 2; k++) {
            snprintf(name, sizeof name, "head.%s.conv%d", block[i], k + 1);
            load_linear(ld, &m->res[i][k], name, c, 9 * c, 1);
            /* the first conv of layer1.0 and layer2.0 halves the rows */
            winograd_layout(ld, &m->res[i][k], k == 0 && i % 2 == 0);
        }
        if (i % 2 == 0) { /* the first block of each pair halves the rows */
            snprintf(name, sizeof name, "head.%s.shortcut", block[i]);
            load_linear(ld, &m->res_short[i / 2], name, c, c, 1);
        }
    }
    load_linear(ld, &m->head_conv2, "head.conv2", c, 9 * c, 1);
    winograd_layout(ld, &m->head_conv2, 1);
    load_linear(ld, &m->tdnn, "tdnn", CAMPP_INIT_CHANNELS,
                (int64_t)CAMPP_TDNN_TAPS * c * CAMPP_HEAD_ROWS, 1);
}

static void load_blocks(loader *ld, sw_campp *m)
{
    char name[96];
    int channels = CAMPP_INIT_CHANNELS, index = 0;
    for (int k = 0; k < CAMPP_BLOCKS; k++) {
        for (int i = 0; i < campp_block_layers[k]; i++, index++) {
            campp_layer *l = &m->layers[index];
            l->in_channels = channels + i * CAMPP_GROWTH;
            l->dilation = campp_block_dilation[k];
            snprintf(name, sizeof name, "block%d.%d.norm", k + 1, i + 1);
            load_affine(ld, &l->norm, name, l->in_channels);
            snprintf(name, sizeof name, "block%d.%d.linear1", k + 1, i + 1);
            load_linear(ld, &l->bottle, name, CAMPP_BN_CHANNELS, l->in_channels, 1);
            snprintf(name, sizeof name, "block%d.%d.local", k + 1, i + 1);
            load_linear(ld, &l->local, name, CAMPP_GROWTH, 3 * CAMPP_BN_CHANNELS, 0);
            snprintf(name, sizeof name, "block%d.%d.ctx1", k + 1, i + 1);
            load_linear(ld, &l->ctx_in, name, CAMPP_CTX_CHANNELS, CAMPP_BN_CHANNELS, 1);
            snprintf(name, sizeof name, "block%d.%d.ctx2", k + 1, i + 1);
            load_mask_logits(ld, &l->ctx_out, name);
        }
        channels += campp_block_layers[k] * CAMPP_GROWTH;
        snprintf(name, sizeof name, "transit%d.norm", k + 1);
        load_affine(ld, &m->transit_norm[k], name, channels);
        snprintf(name, sizeof name, "transit%d", k + 1);
        load_linear(ld, &m->transit[k], name, channels / 2, channels, k == CAMPP_BLOCKS - 1);
        channels /= 2;
    }
}

sw_status sw_campp_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                          sw_campp **out, sw_error *err)
{
    *out = NULL;
    sw_campp *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    if (fused_entries(be, err) != SW_OK) {
        sw_campp_destroy(m);
        return err->code;
    }
    loader ld = sw_weight_source_make(be, tensors, n_tensors, "CAM++ weights", err);
    load_head(&ld, m);
    load_blocks(&ld, m);
    load_linear(&ld, &m->dense, "dense", SW_CAMPP_EMBED_DIM, 2 * CAMPP_OUT_CHANNELS, 1);
    if (err->code == SW_OK)
        campp_load_mel_banks(m, err);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_campp_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}
