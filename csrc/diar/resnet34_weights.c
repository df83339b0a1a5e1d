/* Building the ResNet34 from named host arrays through the shared loader
 * (named_tensors.h). The 3x3 kernels are rearranged here, once, into the
 * layout of the forward's 1-D convolutions (resnet34_internal.h). */
#include <stdio.h>
#include <stdlib.h>

#include "resnet34_internal.h"

const int resnet_stage_blocks[RESNET_STAGES] = {3, 4, 6, 3};
const int resnet_stage_channels[RESNET_STAGES] = {32, 64, 128, 256};

/* name [C_out, C_in, 3, 3] -> w [C_out, 3 * C_in, 3] with channel df * C_in + c
 * holding tap (df, dt) at position dt; name.b -> b. */
static void load_conv(sw_weight_source *ws, resnet_conv *conv, const char *name, int c_in,
                      int c_out)
{
    conv->c_in = c_in;
    conv->c_out = c_out;
    const float *w = sw_weights_host_f32(ws, name, sw_shape4(c_out, c_in, 3, 3));
    if (!w)
        return;
    float *t = malloc((size_t)c_out * c_in * 9 * sizeof *t);
    if (!t) {
        sw_fail(ws->err, SW_ERR_NOMEM, "ResNet34: out of host memory");
        return;
    }
    for (int o = 0; o < c_out; o++)
        for (int c = 0; c < c_in; c++)
            for (int df = 0; df < 3; df++)
                for (int dt = 0; dt < 3; dt++)
                    t[((size_t)o * 3 * c_in + (size_t)df * c_in + c) * 3 + dt] =
                        w[(((size_t)o * c_in + c) * 3 + df) * 3 + dt];
    sw_weights_upload(ws, t, sw_shape3(c_out, 3 * (int64_t)c_in, 3), &conv->w);
    free(t);
    char bias[96];
    snprintf(bias, sizeof bias, "%s.b", name);
    sw_weights_load(ws, &conv->b, bias, sw_shape1(c_out));
}

static void free_tensor(const sw_resnet34 *m, sw_tensor *t)
{
    sw_model_object_free_weight(&m->obj, t);
}

static void free_weights(sw_model_object *o)
{
    sw_resnet34 *m = (sw_resnet34 *)o;
    sw_tensor *all[] = {&m->conv1.w, &m->conv1.b, &m->seg_w, &m->seg_b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free_tensor(m, all[i]);
    for (int i = 0; i < RESNET_BLOCKS; i++) {
        resnet_block *b = &m->blocks[i];
        sw_tensor *own[] = {&b->conv1.w, &b->conv1.b, &b->conv2.w,
                            &b->conv2.b, &b->short_w, &b->short_b};
        for (size_t k = 0; k < sizeof own / sizeof own[0]; k++)
            free_tensor(m, own[k]);
    }
}

static const sw_model_kind kind = {"ResNet34", "sw_resnet34_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_resnet34, sw_resnet34)

sw_status sw_resnet34_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                             sw_resnet34 **out, sw_error *err)
{
    *out = NULL;
    sw_resnet34 *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    sw_weight_source ws = sw_weight_source_make(be, tensors, n_tensors, "ResNet34 weights", err);
    load_conv(&ws, &m->conv1, "conv1", 1, resnet_stage_channels[0]);
    int c_in = resnet_stage_channels[0], index = 0;
    char name[96];
    for (int s = 0; s < RESNET_STAGES; s++) {
        int c_out = resnet_stage_channels[s];
        for (int i = 0; i < resnet_stage_blocks[s]; i++, index++) {
            resnet_block *b = &m->blocks[index];
            b->stride = s > 0 && i == 0 ? 2 : 1;
            snprintf(name, sizeof name, "layer%d.%d.conv1", s + 1, i);
            load_conv(&ws, &b->conv1, name, c_in, c_out);
            snprintf(name, sizeof name, "layer%d.%d.conv2", s + 1, i);
            load_conv(&ws, &b->conv2, name, c_out, c_out);
            if (b->stride != 1 || c_in != c_out) {
                snprintf(name, sizeof name, "layer%d.%d.shortcut", s + 1, i);
                const float *w = sw_weights_host_f32(&ws, name, sw_shape4(c_out, c_in, 1, 1));
                if (w)
                    sw_weights_upload(&ws, w, sw_shape2(c_out, c_in), &b->short_w);
                snprintf(name, sizeof name, "layer%d.%d.shortcut.b", s + 1, i);
                sw_weights_load(&ws, &b->short_b, name, sw_shape1(c_out));
            }
            c_in = c_out;
        }
    }
    sw_weights_load(&ws, &m->seg_w, "seg_1.weight", sw_shape2(SW_RESNET34_EMBED_DIM, RESNET_STATS));
    sw_weights_load(&ws, &m->seg_b, "seg_1.bias", sw_shape1(SW_RESNET34_EMBED_DIM));
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_resnet34_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}
