/* saywho._core.AudioSpan (py_audio_span.h). */
#include "py_audio_span.h"

#include "audio_span.h"
#include "py_common.h"

SWPY_KIND(audio_span, "AudioSpan")

static PyMethodDef audio_span_methods[] = {
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(audio_span, "AudioSpan",
                "AudioSpan(runtime, {'samples': float32 [n]})\n\n"
                "A span of audio uploaded to the runtime's device once, for the run_span "
                "methods of SegmentationModel, CamppModel and GE2EModel (on_device=) to read "
                "without uploading it again.")

/* the type, once registered: what on_device arguments are checked against */
static PyObject *audio_span_type;

int swpy_audio_span_arg(PyObject *obj, ModelObject *model, ModelObject **out)
{
    *out = NULL;
    if (obj == NULL || obj == Py_None)
        return 0;
    int is_span = audio_span_type ? PyObject_IsInstance(obj, audio_span_type) : 0;
    if (is_span < 0)
        return -1;
    if (!is_span || ((ModelObject *)obj)->kind != &audio_span_kind) {
        PyErr_Format(SwOptionError, "on_device must be an AudioSpan or None, not %S",
                     (PyObject *)Py_TYPE(obj));
        return -1;
    }
    ModelObject *span = (ModelObject *)obj;
    if (!swpy_model_open(span))
        return -1;
    if (span->runtime != model->runtime) {
        PyErr_SetString(SwOptionError, "on_device is an AudioSpan of another Runtime");
        return -1;
    }
    *out = span;
    return 0;
}

const sw_tensor *swpy_audio_span_samples(ModelObject *span)
{
    return span && swpy_model_alive(span) ? sw_audio_span_samples(span->model) : NULL;
}

int swpy_add_audio_span(PyObject *module)
{
    if (swpy_model_add_type(module, "AudioSpan", &audio_span_spec) != 0)
        return -1;
    Py_XDECREF(audio_span_type);
    audio_span_type = PyObject_GetAttrString(module, "AudioSpan"); /* kept: the module's */
    return audio_span_type ? 0 : -1;
}
