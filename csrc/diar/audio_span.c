/* The span of audio that segmentation and the speaker embeddings share on
 * the device (audio_span.h). */
#include "audio_span.h"

#include <math.h>
#include <string.h>

#include "model_object.h"

struct sw_audio_span {
    sw_model_object obj; /* first: model_object.h */
    sw_tensor samples;
};

static void free_weights(sw_model_object *o)
{
    sw_audio_span *s = (sw_audio_span *)o;
    sw_model_object_free_weight(&s->obj, &s->samples);
}

static const sw_model_kind kind = {"audio span", "sw_audio_span_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_audio_span, sw_audio_span)

sw_status sw_audio_span_create(sw_backend *be, const sw_named_tensor *tensors, int n_tensors,
                               sw_audio_span **out, sw_error *err)
{
    *out = NULL;
    const sw_named_tensor *t = NULL;
    for (int i = 0; tensors && i < n_tensors; i++)
        if (tensors[i].name && strcmp(tensors[i].name, "samples") == 0)
            t = &tensors[i];
    if (!t || t->dtype != SW_F32 || t->ndim != 1 || t->shape[0] < 1 || !t->data)
        return sw_fail(err, SW_ERR_ARG,
                       "sw_audio_span_create: a float32 tensor \"samples\" of one dimension and "
                       "at least one sample needed");
    const float *x = t->data;
    for (int64_t i = 0; i < t->shape[0]; i++)
        if (!isfinite(x[i]))
            return sw_fail(err, SW_ERR_ARG, "audio span: sample %lld is not finite", (long long)i);
    sw_audio_span *s = sw_model_object_new(sizeof *s, &kind, be, tensors, n_tensors, err);
    if (!s)
        return err->code;
    /* staged: the host's samples are taken before upload returns, no wait */
    if (sw_tensor_new(be, SW_F32, 1, t->shape, &s->samples, err) == SW_OK)
        be->upload(be, s->samples.data, x, sw_tensor_nbytes(&s->samples), err);
    if (err->code != SW_OK) {
        sw_audio_span_destroy(s);
        return err->code;
    }
    *out = s;
    return SW_OK;
}

const sw_tensor *sw_audio_span_samples(const sw_audio_span *s)
{
    return s && !s->obj.backend_lost && s->samples.data ? &s->samples : NULL;
}

int sw_span_on(const sw_tensor *t, const sw_backend *be, int64_t n)
{
    return t && t->data && t->backend == be && t->dtype == SW_F32 && t->ndim == 1 &&
           t->shape[0] == n;
}
