/* saywho._core.SegmentationModel, CamppModel, ResNet34Model and GE2EModel:
 * the networks of csrc/diar on a Runtime's backend, each a SWPY_KIND and a
 * SWPY_MODEL_TYPE of py_model.h's one life cycle (the VAD is py_vad.c's). */
#include "py_audio_span.h"
#include "py_model.h"

#include "campp.h"
#include "ge2e.h"
#include "resnet34.h"
#include "segmentation.h"

/* saywho._core.SegmentationModel: pyannote's segmentation-3.0. */
SWPY_KIND(segmentation, "SegmentationModel")

/* One run's arguments, for the function swpy_model_run calls without the GIL
 * under the Runtime's lock. */
typedef struct segmentation_call {
    sw_segmentation *model;
    const float *src;       /* waveforms [batch, samples], or the span */
    npy_intp span_samples;  /* run_span: the span's length */
    const int64_t *offsets; /* run_span: each item's first sample; NULL for run */
    ModelObject *shared;    /* run_span: an AudioSpan of the span already up, or NULL */
    int batch;
    int64_t samples;
    float *dst;
} segmentation_call;

static void segmentation_locked(void *ctx, sw_error *err)
{
    const segmentation_call *c = ctx;
    if (c->offsets)
        sw_segmentation_run_span(c->model, c->src, c->span_samples,
                                 swpy_audio_span_samples(c->shared), c->offsets, c->batch,
                                 c->samples, c->dst, err);
    else
        sw_segmentation_run(c->model, c->src, c->batch, c->samples, c->dst, err);
}

static PyObject *segmentation_run(ModelObject *self, PyObject *arg)
{
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *wave = swpy_float32_array(arg, "waveforms", 1, 2);
    if (!wave)
        return NULL;
    int nd = PyArray_NDIM(wave);
    npy_intp batch = nd == 2 ? PyArray_DIM(wave, 0) : 1, samples = PyArray_DIM(wave, nd - 1);
    int64_t frames = sw_segmentation_frames(samples);
    if (batch < 1 || batch > 65536 || frames < 1) {
        PyErr_Format(SwOptionError,
                     "waveforms must be [batch, samples] or [samples] with at least one item and "
                     "enough samples for one frame; got %lld x %lld",
                     (long long)batch, (long long)samples);
        Py_DECREF(wave);
        return NULL;
    }
    npy_intp dims[3] = {batch, (npy_intp)frames, SW_SEG_CLASSES};
    PyObject *out = PyArray_SimpleNew(3, dims, NPY_FLOAT32);
    if (!out) {
        Py_DECREF(wave);
        return NULL;
    }
    segmentation_call c = {.model = self->model,
                           .src = PyArray_DATA(wave),
                           .batch = (int)batch,
                           .samples = samples,
                           .dst = PyArray_DATA((PyArrayObject *)out)};
    if (swpy_model_run(self, segmentation_locked, &c) != 0)
        Py_CLEAR(out);
    Py_DECREF(wave);
    return out;
}

/* run_span(span [samples], offsets int64 [batch], window samples,
 * on_device=None): on_device, an AudioSpan of span, is read instead of
 * uploading the span again */
static PyObject *segmentation_run_span(ModelObject *self, PyObject *args)
{
    PyObject *span_obj, *offsets_obj, *device_obj = Py_None;
    long long samples;
    ModelObject *shared = NULL;
    if (!PyArg_ParseTuple(args, "OOL|O:run_span", &span_obj, &offsets_obj, &samples, &device_obj) ||
        !swpy_model_open(self) || swpy_audio_span_arg(device_obj, self, &shared) != 0)
        return NULL;
    PyArrayObject *span = swpy_float32_array(span_obj, "span", 1, 1);
    if (!span)
        return NULL;
    PyArrayObject *offsets = (PyArrayObject *)PyArray_FROMANY(
        offsets_obj, NPY_INT64, 1, 1,
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!offsets) {
        Py_DECREF(span);
        return NULL;
    }
    npy_intp batch = PyArray_DIM(offsets, 0);
    int64_t frames = sw_segmentation_frames(samples);
    PyObject *out = NULL;
    if (batch < 1 || batch > 65536 || frames < 1) {
        PyErr_Format(SwOptionError,
                     "run_span needs 1 to 65536 offsets and a window of enough samples for one "
                     "frame; got %lld offsets, %lld samples",
                     (long long)batch, samples);
    } else {
        npy_intp dims[3] = {batch, (npy_intp)frames, SW_SEG_CLASSES};
        out = PyArray_SimpleNew(3, dims, NPY_FLOAT32);
    }
    if (out) {
        segmentation_call c = {.model = self->model,
                               .src = PyArray_DATA(span),
                               .span_samples = PyArray_DIM(span, 0),
                               .offsets = PyArray_DATA(offsets),
                               .shared = shared,
                               .batch = (int)batch,
                               .samples = samples,
                               .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, segmentation_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(span);
    Py_DECREF(offsets);
    return out;
}

static PyObject *segmentation_frames(PyObject *unused, PyObject *arg)
{
    long long samples = PyLong_AsLongLong(arg);
    if (samples == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(samples < 0 ? 0 : (long long)sw_segmentation_frames(samples));
}

#define CF(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef segmentation_methods[] = {
    {"run", CF(segmentation_run), METH_O,
     "run(waveforms float32 [batch, samples] or [samples]) -> log-probabilities float32 "
     "[batch, frames, 7]"},
    {"run_span", CF(segmentation_run_span), METH_VARARGS,
     "run_span(span float32 [samples], offsets int64 [batch], window int) -> log-probabilities "
     "float32 [batch, frames, 7]: run() on span[o : o + window] for each offset o (multiples of "
     "10), SincNet's first convolution once over the span"},
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(segmentation, "SegmentationModel",
                "SegmentationModel(runtime, tensors: dict[str, ndarray])\n\n"
                "pyannote's segmentation-3.0 network on the runtime's device; tensor names and "
                "shapes as in docs/segmentation.md.")

/* saywho._core.CamppModel: the CAM++ speaker encoder. */
SWPY_KIND(campp, "CamppModel")

typedef sw_status (*campp_items_fn)(sw_campp *, const float *, const int64_t *, int, float *,
                                    sw_error *);

/* One run's arguments, for the functions swpy_model_run calls without the GIL
 * under the Runtime's lock (one a method). */
typedef struct campp_call {
    sw_campp *model;
    const float *src;       /* features, the front's rows or the span */
    npy_intp n;             /* frames (run, front) or the span's samples (run_span) */
    const int64_t *lengths; /* items' frames (run_items, run_front_items, run_span) */
    const int32_t *frames;  /* run_span: the span's fbank frames of the items */
    ModelObject *shared;    /* run_span: an AudioSpan of the span already up, or NULL */
    int batch;
    int64_t max_frames;   /* run_span */
    campp_items_fn items; /* run_items or run_front_items */
    float *dst;
} campp_call;

static void campp_run_locked(void *ctx, sw_error *err)
{
    const campp_call *c = ctx;
    sw_campp_run(c->model, c->src, c->batch, c->n, c->dst, err);
}

static void campp_items_locked(void *ctx, sw_error *err)
{
    const campp_call *c = ctx;
    c->items(c->model, c->src, c->lengths, c->batch, c->dst, err);
}

static void campp_front_locked(void *ctx, sw_error *err)
{
    const campp_call *c = ctx;
    sw_campp_front(c->model, c->src, (int64_t)c->n, c->dst, err);
}

static void campp_span_locked(void *ctx, sw_error *err)
{
    const campp_call *c = ctx;
    sw_campp_run_span(c->model, c->src, c->n, swpy_audio_span_samples(c->shared), c->frames,
                      c->lengths, c->batch, c->max_frames, c->dst, err);
}

static PyObject *campp_run(ModelObject *self, PyObject *arg)
{
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *feat = swpy_float32_array(arg, "features", 3, 3);
    if (!feat)
        return NULL;
    npy_intp batch = PyArray_DIM(feat, 0), frames = PyArray_DIM(feat, 1);
    if (batch < 1 || batch > 65536 || frames < SW_CAMPP_MIN_FRAMES ||
        PyArray_DIM(feat, 2) != SW_CAMPP_FEAT_DIM) {
        PyErr_Format(SwOptionError,
                     "features must be [batch, frames, %d] with at least one item and %d frames; "
                     "got %lld x %lld x %lld",
                     SW_CAMPP_FEAT_DIM, SW_CAMPP_MIN_FRAMES, (long long)batch, (long long)frames,
                     (long long)PyArray_DIM(feat, 2));
        Py_DECREF(feat);
        return NULL;
    }
    npy_intp dims[2] = {batch, SW_CAMPP_EMBED_DIM};
    PyObject *out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!out) {
        Py_DECREF(feat);
        return NULL;
    }
    campp_call c = {.model = self->model,
                    .src = PyArray_DATA(feat),
                    .n = frames,
                    .batch = (int)batch,
                    .dst = PyArray_DATA((PyArrayObject *)out)};
    if (swpy_model_run(self, campp_run_locked, &c) != 0)
        Py_CLEAR(out);
    Py_DECREF(feat);
    return out;
}

/* run_items(features [total, 80], lengths [batch]): items of any length in
 * one call; run_front_items the same from the front's rows [total, 320] */
static PyObject *campp_items(ModelObject *self, PyObject *args, const char *format, int dim,
                             campp_items_fn run)
{
    PyObject *feat_obj, *lengths_obj;
    if (!PyArg_ParseTuple(args, format, &feat_obj, &lengths_obj) || !swpy_model_open(self))
        return NULL;
    PyArrayObject *feat = swpy_float32_array(feat_obj, "features", 2, 2);
    if (!feat)
        return NULL;
    PyArrayObject *lengths = (PyArrayObject *)PyArray_FROMANY(
        lengths_obj, NPY_INT64, 1, 1,
        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!lengths) {
        Py_DECREF(feat);
        return NULL;
    }
    npy_intp batch = PyArray_DIM(lengths, 0), total = 0;
    const int64_t *len = PyArray_DATA(lengths);
    int ok = batch >= 1 && batch <= 65536 && PyArray_DIM(feat, 1) == dim;
    for (npy_intp b = 0; ok && b < batch; b++) {
        ok = len[b] >= SW_CAMPP_MIN_FRAMES && len[b] <= PyArray_DIM(feat, 0) - total;
        total += ok ? (npy_intp)len[b] : 0;
    }
    PyObject *out = NULL;
    if (!ok || total != PyArray_DIM(feat, 0)) {
        PyErr_Format(SwOptionError,
                     "features must be [total, %d] and lengths 1 to 65536 items of at least %d "
                     "frames that sum to total; got %lld x %lld features, %lld lengths",
                     dim, SW_CAMPP_MIN_FRAMES, (long long)PyArray_DIM(feat, 0),
                     (long long)PyArray_DIM(feat, 1), (long long)batch);
    } else {
        npy_intp dims[2] = {batch, SW_CAMPP_EMBED_DIM};
        out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    }
    if (out) {
        campp_call c = {.model = self->model,
                        .src = PyArray_DATA(feat),
                        .lengths = len,
                        .batch = (int)batch,
                        .items = run,
                        .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, campp_items_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(feat);
    Py_DECREF(lengths);
    return out;
}

static PyObject *campp_run_items(ModelObject *self, PyObject *args)
{
    return campp_items(self, args, "OO:run_items", SW_CAMPP_FEAT_DIM, sw_campp_run_items);
}

static PyObject *campp_run_front_items(ModelObject *self, PyObject *args)
{
    return campp_items(self, args, "OO:run_front_items", SW_CAMPP_FRONT_DIM,
                       sw_campp_run_front_items);
}

/* front(features [frames, 80]) -> [frames, 320] */
static PyObject *campp_front(ModelObject *self, PyObject *arg)
{
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *feat = swpy_float32_array(arg, "features", 2, 2);
    if (!feat)
        return NULL;
    npy_intp frames = PyArray_DIM(feat, 0);
    if (frames < SW_CAMPP_MIN_FRAMES || frames > INT32_MAX / (SW_CAMPP_FEAT_DIM * 9) ||
        PyArray_DIM(feat, 1) != SW_CAMPP_FEAT_DIM) {
        PyErr_Format(SwOptionError,
                     "features must be [frames, %d] with %d to %d frames; got %lld x %lld",
                     SW_CAMPP_FEAT_DIM, SW_CAMPP_MIN_FRAMES, INT32_MAX / (SW_CAMPP_FEAT_DIM * 9),
                     (long long)frames, (long long)PyArray_DIM(feat, 1));
        Py_DECREF(feat);
        return NULL;
    }
    npy_intp dims[2] = {frames, SW_CAMPP_FRONT_DIM};
    PyObject *out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (out) {
        campp_call c = {.model = self->model,
                        .src = PyArray_DATA(feat),
                        .n = frames,
                        .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, campp_front_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(feat);
    return out;
}

/* run_span(span [samples], frames int32 [total], lengths int64 [batch],
 * max_frames, on_device=None): the features made on the device
 * (sw_campp_run_span); on_device as segmentation_run_span's */
static PyObject *campp_run_span(ModelObject *self, PyObject *args)
{
    PyObject *span_obj, *frames_obj, *lengths_obj, *device_obj = Py_None;
    long long max_frames;
    ModelObject *shared = NULL;
    if (!PyArg_ParseTuple(args, "OOOL|O:run_span", &span_obj, &frames_obj, &lengths_obj,
                          &max_frames, &device_obj) ||
        !swpy_model_open(self) || swpy_audio_span_arg(device_obj, self, &shared) != 0)
        return NULL;
    PyArrayObject *span = swpy_float32_array(span_obj, "span", 1, 1);
    PyArrayObject *frames =
        span ? (PyArrayObject *)PyArray_FROMANY(frames_obj, NPY_INT32, 1, 1,
                                                NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                    NPY_ARRAY_FORCECAST)
             : NULL;
    PyArrayObject *lengths =
        frames ? (PyArrayObject *)PyArray_FROMANY(lengths_obj, NPY_INT64, 1, 1,
                                                  NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                      NPY_ARRAY_FORCECAST)
               : NULL;
    PyObject *out = NULL;
    if (lengths) {
        npy_intp batch = PyArray_DIM(lengths, 0), total = 0;
        const int64_t *len = PyArray_DATA(lengths);
        int ok = batch >= 1 && batch <= 65536 && max_frames >= 1;
        for (npy_intp b = 0; ok && b < batch; b++) {
            ok = len[b] >= SW_CAMPP_MIN_FRAMES && len[b] <= PyArray_DIM(frames, 0) - total;
            total += ok ? (npy_intp)len[b] : 0;
        }
        if (!ok || total != PyArray_DIM(frames, 0)) {
            PyErr_Format(SwOptionError,
                         "run_span needs 1 to 65536 lengths of at least %d frames that sum to "
                         "the frames' %lld, and max_frames >= 1",
                         SW_CAMPP_MIN_FRAMES, (long long)PyArray_DIM(frames, 0));
        } else {
            npy_intp dims[2] = {batch, SW_CAMPP_EMBED_DIM};
            out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
        }
        if (out) {
            campp_call c = {.model = self->model,
                            .src = PyArray_DATA(span),
                            .n = PyArray_DIM(span, 0),
                            .lengths = len,
                            .frames = PyArray_DATA(frames),
                            .shared = shared,
                            .batch = (int)batch,
                            .max_frames = max_frames,
                            .dst = PyArray_DATA((PyArrayObject *)out)};
            if (swpy_model_run(self, campp_span_locked, &c) != 0)
                Py_CLEAR(out);
        }
    }
    Py_XDECREF(span);
    Py_XDECREF(frames);
    Py_XDECREF(lengths);
    return out;
}

static PyObject *campp_features_on_device(ModelObject *self, PyObject *unused)
{
    (void)unused;
    sw_campp *model = swpy_model_open(self);
    if (!model)
        return NULL;
    return PyBool_FromLong(sw_campp_features_on_device(model));
}

static PyMethodDef campp_methods[] = {
    {"run", CF(campp_run), METH_O,
     "run(features float32 [batch, frames, 80]) -> embeddings float32 [batch, 192]"},
    {"run_items", CF(campp_run_items), METH_VARARGS,
     "run_items(features float32 [total, 80], lengths int64 [batch]) -> embeddings float32 "
     "[batch, 192]: items of different lengths, one after the other, in one call"},
    {"front", CF(campp_front), METH_O,
     "front(features float32 [frames, 80]) -> float32 [frames, 320]: the 2-D front alone"},
    {"run_front_items", CF(campp_run_front_items), METH_VARARGS,
     "run_front_items(front float32 [total, 320], lengths int64 [batch]) -> embeddings float32 "
     "[batch, 192]: run_items from the front's rows on"},
    {"features_on_device", CF(campp_features_on_device), METH_NOARGS,
     "features_on_device() -> bool: whether the device makes the fbank itself (run_span)"},
    {"run_span", CF(campp_run_span), METH_VARARGS,
     "run_span(span float32 [samples], frames int32 [total], lengths int64 [batch], max_frames) "
     "-> embeddings float32 [batch, 192]: run_items on the span's fbank frames `frames` (item b "
     "its lengths[b] after item b - 1's), each item less its own mean, the fbank made on the "
     "device from the span (only where features_on_device())"},
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(campp, "CamppModel",
                "CamppModel(runtime, tensors: dict[str, ndarray])\n\n"
                "3D-Speaker's CAM++ speaker encoder on the runtime's device; tensor names and "
                "shapes as in docs/campp.md (saywho.diarization.embedding_campp prepares them).")

/* saywho._core.ResNet34Model: WeSpeaker's ResNet34. */
SWPY_KIND(resnet34, "ResNet34Model")

/* One run's arguments, for the function swpy_model_run calls without the GIL
 * under the Runtime's lock. */
typedef struct resnet34_call {
    sw_resnet34 *model;
    const float *features;
    int batch;
    int64_t frames;
    const float *masks; /* NULL: one embedding an item */
    int n_masks;
    int64_t mask_frames;
    float *dst;
} resnet34_call;

static void resnet34_locked(void *ctx, sw_error *err)
{
    const resnet34_call *c = ctx;
    sw_resnet34_run(c->model, c->features, c->batch, c->frames, c->masks, c->n_masks,
                    c->mask_frames, c->dst, err);
}

static PyObject *resnet34_run(ModelObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"features", "masks", NULL};
    PyObject *features_obj, *masks_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:run", kwlist, &features_obj, &masks_obj))
        return NULL;
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *feat = swpy_float32_array(features_obj, "features", 3, 3);
    if (!feat)
        return NULL;
    PyArrayObject *masks = NULL;
    if (masks_obj != Py_None && !(masks = swpy_float32_array(masks_obj, "masks", 3, 3))) {
        Py_DECREF(feat);
        return NULL;
    }
    npy_intp batch = PyArray_DIM(feat, 0), frames = PyArray_DIM(feat, 1);
    npy_intp n_masks = masks ? PyArray_DIM(masks, 1) : 1,
             mask_frames = masks ? PyArray_DIM(masks, 2) : 0;
    PyObject *out = NULL;
    if (batch < 1 || batch > 65536 || frames < 1 || PyArray_DIM(feat, 2) != SW_RESNET34_FEAT_DIM)
        PyErr_Format(SwOptionError,
                     "features must be [batch, frames, %d] with at least one item and frame; got "
                     "%lld x %lld x %lld",
                     SW_RESNET34_FEAT_DIM, (long long)batch, (long long)frames,
                     (long long)PyArray_DIM(feat, 2));
    else if (masks &&
             (PyArray_DIM(masks, 0) != batch || n_masks < 1 || n_masks > 4096 || mask_frames < 1))
        PyErr_Format(SwOptionError,
                     "masks must be [batch, speakers, frames] with batch %lld; got %lld x %lld x "
                     "%lld",
                     (long long)batch, (long long)PyArray_DIM(masks, 0), (long long)n_masks,
                     (long long)mask_frames);
    else {
        /* without masks: [batch, 256] */
        npy_intp dims[3] = {batch, n_masks, SW_RESNET34_EMBED_DIM};
        if (!masks)
            dims[1] = SW_RESNET34_EMBED_DIM;
        out = PyArray_SimpleNew(masks ? 3 : 2, dims, NPY_FLOAT32);
    }
    if (out) {
        resnet34_call c = {.model = self->model,
                           .features = PyArray_DATA(feat),
                           .batch = (int)batch,
                           .frames = frames,
                           .masks = masks ? PyArray_DATA(masks) : NULL,
                           .n_masks = (int)n_masks,
                           .mask_frames = mask_frames,
                           .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, resnet34_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(feat);
    Py_XDECREF(masks);
    return out;
}

static PyMethodDef resnet34_methods[] = {
    {"run", CF(resnet34_run), METH_VARARGS | METH_KEYWORDS,
     "run(features float32 [batch, frames, 80], masks float32 [batch, speakers, frames] or None) "
     "-> embeddings float32 [batch, speakers, 256] ([batch, 256] without masks); the pooling "
     "weighs the last stage's frames by each mask, resampled; NaN where a mask keeps nothing"},
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(resnet34, "ResNet34Model",
                "ResNet34Model(runtime, tensors: dict[str, ndarray])\n\n"
                "WeSpeaker's ResNet34 on the runtime's device; tensors as "
                "saywho.diarization.embedding_resnet.fold_state_dict makes them.")

/* saywho._core.GE2EModel: the GE2E speaker encoder. */
SWPY_KIND(ge2e, "GE2EModel")

/* One run's arguments, for the function swpy_model_run calls without the GIL
 * under the Runtime's lock. */
typedef struct ge2e_call {
    sw_ge2e *model;
    const float *mels;
    int n;
    int64_t frames;
    const int64_t *lengths; /* NULL: every item all its frames */
    const int32_t *owners;  /* NULL: one embedding an item, else one a group */
    int groups;
    float *dst;
} ge2e_call;

static void ge2e_locked(void *ctx, sw_error *err)
{
    const ge2e_call *c = ctx;
    if (c->owners)
        sw_ge2e_run_pooled(c->model, c->mels, c->n, c->frames, c->lengths, c->owners, c->groups,
                           c->dst, err);
    else
        sw_ge2e_run(c->model, c->mels, c->n, c->frames, c->lengths, c->dst, err);
}

static PyObject *ge2e_run(ModelObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"mels", "lengths", "owners", NULL};
    PyObject *mels_obj, *lengths_obj = Py_None, *owners_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OO:run", kwlist, &mels_obj, &lengths_obj,
                                     &owners_obj))
        return NULL;
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *mels = swpy_float32_array(mels_obj, "mels", 3, 3);
    if (!mels)
        return NULL;
    PyArrayObject *lengths = NULL, *owners = NULL;
    int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST;
    if (lengths_obj != Py_None)
        lengths = (PyArrayObject *)PyArray_FROMANY(lengths_obj, NPY_INT64, 1, 1, flags);
    if (owners_obj != Py_None && !PyErr_Occurred())
        owners = (PyArrayObject *)PyArray_FROMANY(owners_obj, NPY_INT32, 1, 1, flags);
    if (PyErr_Occurred()) {
        Py_DECREF(mels);
        Py_XDECREF(lengths);
        return NULL;
    }
    npy_intp n = PyArray_DIM(mels, 0), frames = PyArray_DIM(mels, 1), groups = 0;
    PyObject *out = NULL;
    for (npy_intp i = 0; owners && i < PyArray_DIM(owners, 0); i++) {
        int32_t g = ((const int32_t *)PyArray_DATA(owners))[i];
        groups = g + 1 > groups ? g + 1 : groups;
    }
    if (n < 1 || n > 1 << 20 || frames < 1 || PyArray_DIM(mels, 2) != SW_GE2E_MELS)
        PyErr_Format(SwOptionError,
                     "mels must be [n, frames, %d] with at least one item and frame; got %lld x "
                     "%lld x %lld",
                     SW_GE2E_MELS, (long long)n, (long long)frames,
                     (long long)PyArray_DIM(mels, 2));
    else if (lengths && PyArray_DIM(lengths, 0) != n)
        PyErr_Format(SwOptionError, "lengths has %lld items, mels %lld",
                     (long long)PyArray_DIM(lengths, 0), (long long)n);
    else if (owners && PyArray_DIM(owners, 0) != n)
        PyErr_Format(SwOptionError, "owners has %lld items, mels %lld",
                     (long long)PyArray_DIM(owners, 0), (long long)n);
    else {
        npy_intp dims[2] = {owners ? groups : n, SW_GE2E_EMBED_DIM};
        out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    }
    if (out) {
        ge2e_call c = {.model = self->model,
                       .mels = PyArray_DATA(mels),
                       .n = (int)n,
                       .frames = frames,
                       .lengths = lengths ? PyArray_DATA(lengths) : NULL,
                       .owners = owners ? PyArray_DATA(owners) : NULL,
                       .groups = (int)groups,
                       .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, ge2e_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(mels);
    Py_XDECREF(lengths);
    Py_XDECREF(owners);
    return out;
}

/* run_span's arguments: the span (its device copy, if shared, read under
 * the lock, where the AudioSpan cannot be closed meanwhile) */
typedef struct ge2e_span_call {
    sw_ge2e *model;
    sw_ge2e_span span;
    ModelObject *shared;
    float *dst;
} ge2e_span_call;

static void ge2e_span_locked(void *ctx, sw_error *err)
{
    ge2e_span_call *c = ctx;
    c->span.on_device = swpy_audio_span_samples(c->shared);
    sw_ge2e_run_span(c->model, &c->span, c->dst, err);
}

static PyArrayObject *ge2e_array(PyObject *obj, int type)
{
    return (PyArrayObject *)PyArray_FROMANY(
        obj, type, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
}

/* run_span(span [samples], frames int32, starts int64 [n], lengths int64 [n],
 * owners int32 [n], gains float32 [groups], max_rows): the mels made on
 * the device (sw_ge2e_run_span) */
static PyObject *ge2e_run_span(ModelObject *self, PyObject *args)
{
    PyObject *objs[6], *device_obj = Py_None;
    long long max_rows;
    ModelObject *shared = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOL|O:run_span", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &max_rows, &device_obj) ||
        !swpy_model_open(self) || swpy_audio_span_arg(device_obj, self, &shared) != 0)
        return NULL;
    static const int types[6] = {NPY_FLOAT32, NPY_INT32, NPY_INT64,
                                 NPY_INT64,   NPY_INT32, NPY_FLOAT32};
    PyArrayObject *a[6] = {NULL};
    for (int i = 0; i < 6 && !PyErr_Occurred(); i++)
        a[i] = ge2e_array(objs[i], types[i]);
    PyObject *out = NULL;
    if (!PyErr_Occurred()) {
        npy_intp n = PyArray_DIM(a[2], 0), groups = PyArray_DIM(a[5], 0);
        if (n < 1 || n > 1 << 20 || PyArray_DIM(a[3], 0) != n || PyArray_DIM(a[4], 0) != n ||
            groups < 1 || groups > n || max_rows < 1 || max_rows > 1 << 20) {
            PyErr_Format(SwOptionError,
                         "run_span needs 1 to 2**20 partials (starts, lengths and owners of one "
                         "length), 1 to that many gains and max_rows 1 to 2**20");
        } else {
            npy_intp dims[2] = {groups, SW_GE2E_EMBED_DIM};
            out = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
        }
        if (out) {
            ge2e_span_call c = {.model = self->model,
                                .span = {PyArray_DATA(a[0]), PyArray_DIM(a[0], 0),
                                         PyArray_DATA(a[1]), PyArray_DIM(a[1], 0),
                                         PyArray_DATA(a[2]), PyArray_DATA(a[3]), PyArray_DATA(a[4]),
                                         PyArray_DATA(a[5]), (int)n, (int)groups, (int)max_rows,
                                         NULL},
                                .shared = shared,
                                .dst = PyArray_DATA((PyArrayObject *)out)};
            if (swpy_model_run(self, ge2e_span_locked, &c) != 0)
                Py_CLEAR(out);
        }
    }
    for (int i = 0; i < 6; i++)
        Py_XDECREF(a[i]);
    return out;
}

static PyObject *ge2e_mels_on_device(ModelObject *self, PyObject *unused)
{
    (void)unused;
    sw_ge2e *model = swpy_model_open(self);
    if (!model)
        return NULL;
    return PyBool_FromLong(sw_ge2e_mels_on_device(model));
}

static PyMethodDef ge2e_methods[] = {
    {"run_span", CF(ge2e_run_span), METH_VARARGS,
     "run_span(span float32 [samples], frames int32 [total], starts int64 [n], lengths int64 "
     "[n], owners int32 [n], gains float32 [groups], max_rows) -> [groups, 256]: partial i is "
     "the span's mel frames frames[starts[i]:][:lengths[i]] times gains[owners[i]], the mels "
     "made on the device; each group's partials summed there, normalised"},
    {"mels_on_device", CF(ge2e_mels_on_device), METH_NOARGS,
     "mels_on_device() -> whether run_span may be called (the backend makes GE2E's mels)"},

    {"run", CF(ge2e_run), METH_VARARGS | METH_KEYWORDS,
     "run(mels float32 [n, frames, 40], lengths int64 [n] or None, owners int32 [n] or None) "
     "-> unit embeddings float32 [n, 256] (item i reads its first lengths[i] frames); with "
     "owners, [max(owners) + 1, 256]: each group's items summed on the device, normalised"},
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(ge2e, "GE2EModel",
                "GE2EModel(runtime, tensors: dict[str, ndarray])\n\n"
                "The GE2E speaker encoder (resemblyzer's state-dict names) on the runtime's "
                "device.")

static PyMethodDef diar_functions[] = {
    {"segmentation_frames", segmentation_frames, METH_O,
     "segmentation_frames(samples) -> output frames of the segmentation network (0 if too few)"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_diar(PyObject *m)
{
    if (PyModule_AddFunctions(m, diar_functions) != 0)
        return -1;
    if (swpy_model_add_type(m, "SegmentationModel", &segmentation_spec) != 0 ||
        swpy_model_add_type(m, "CamppModel", &campp_spec) != 0 ||
        swpy_model_add_type(m, "ResNet34Model", &resnet34_spec) != 0 ||
        swpy_model_add_type(m, "GE2EModel", &ge2e_spec) != 0 || swpy_add_audio_span(m) != 0)
        return -1;
    return 0;
}
