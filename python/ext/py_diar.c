/* saywho._core.SegmentationModel: pyannote's segmentation network of
 * csrc/diar on a Runtime's backend.
 *
 * The model keeps its Runtime alive and runs under the Runtime's lock with the
 * GIL released. If the Runtime is closed under it, its pool has already taken
 * every block back, and the model only frees its host memory. */
#include "py_runtime.h"

#include <string.h>

#include "campp.h"
#include "segmentation.h"

static PyObject *runtime_type; /* saywho._core.Runtime, looked up at init */

typedef struct {
    PyObject_HEAD PyObject *runtime; /* RuntimeObject */
    sw_segmentation *model;
} SegmentationObject;

static RuntimeObject *rt_of(SegmentationObject *m)
{
    return (RuntimeObject *)m->runtime;
}

/* With the lock held: has the Runtime been closed under the model? */
static int backend_alive(SegmentationObject *m)
{
    if (m->model && rt_of(m)->backend != sw_segmentation_backend(m->model)) {
        sw_segmentation_backend_lost(m->model);
        return 0;
    }
    return m->model != NULL;
}

/* The arrays and names of `tensors`, kept alive while the C core reads them. */
typedef struct held_tensors {
    sw_named_tensor *t;
    PyObject **refs; /* 2 per tensor: UTF-8 name and array */
    Py_ssize_t n;
} held_tensors;

static void held_free(held_tensors *h)
{
    for (Py_ssize_t i = 0; h->refs && i < 2 * h->n; i++)
        Py_XDECREF(h->refs[i]);
    PyMem_Free(h->refs);
    PyMem_Free(h->t);
}

static int hold_tensors(PyObject *tensors, held_tensors *h)
{
    memset(h, 0, sizeof *h);
    if (!PyDict_Check(tensors)) {
        PyErr_SetString(SwModelError, "tensors must be a dict of name -> array");
        return -1;
    }
    Py_ssize_t count = PyDict_Size(tensors);
    h->t = swpy_calloc((size_t)count + 1, sizeof *h->t);
    h->refs = swpy_calloc(2 * (size_t)count + 1, sizeof *h->refs);
    if (!h->t || !h->refs) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(tensors, &pos, &key, &value) && h->n < count) {
        /* the UTF-8 bytes hold the name's storage (PyUnicode_AsUTF8 is not
         * in Python 3.9's limited API) */
        PyObject *utf8 = PyUnicode_Check(key) ? PyUnicode_AsUTF8String(key) : NULL;
        const char *name = utf8 ? PyBytes_AsString(utf8) : NULL;
        if (!name) {
            Py_XDECREF(utf8);
            if (!PyErr_Occurred())
                PyErr_SetString(SwModelError, "tensor names must be str");
            return -1;
        }
        PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(
            value, NPY_FLOAT32, 0, 0,
            NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
        if (!arr) {
            PyErr_Clear();
            PyErr_Format(SwModelError, "tensor '%s' is not a float array", name);
            Py_DECREF(utf8);
            return -1;
        }
        h->refs[2 * h->n] = utf8;
        h->refs[2 * h->n + 1] = (PyObject *)arr;
        sw_named_tensor *t = &h->t[h->n++];
        if (PyArray_NDIM(arr) > SW_MAX_DIMS) {
            PyErr_Format(SwModelError, "tensor '%s' has %d dimensions", name, PyArray_NDIM(arr));
            return -1;
        }
        t->name = name;
        t->dtype = SW_F32;
        t->ndim = PyArray_NDIM(arr);
        for (int i = 0; i < t->ndim; i++)
            t->shape[i] = PyArray_DIM(arr, i);
        t->data = PyArray_DATA(arr);
    }
    return 0;
}

static int seg_init(SegmentationObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"runtime", "tensors", NULL};
    PyObject *runtime, *tensors;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:SegmentationModel", kwlist, &runtime,
                                     &tensors))
        return -1;
    if (self->runtime) {
        PyErr_SetString(PyExc_RuntimeError, "SegmentationModel is already initialised");
        return -1;
    }
    int is_rt = PyObject_IsInstance(runtime, runtime_type);
    if (is_rt <= 0) {
        if (is_rt == 0)
            PyErr_SetString(PyExc_TypeError, "runtime must be a saywho._core.Runtime");
        return -1;
    }
    RuntimeObject *rt = (RuntimeObject *)runtime;
    if (!rt->backend) {
        PyErr_SetString(SwDeviceError, "the Runtime is closed");
        return -1;
    }
    held_tensors h;
    if (hold_tensors(tensors, &h) != 0) {
        held_free(&h);
        return -1;
    }
    sw_error err = {SW_OK, ""};
    sw_segmentation *model = NULL;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(rt->lock, WAIT_LOCK);
    if (!rt->backend)
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime was closed");
    else
        sw_segmentation_create(rt->backend, h.t, (int)h.n, &model, &err);
    PyThread_release_lock(rt->lock);
    Py_END_ALLOW_THREADS
    held_free(&h);
    if (err.code != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    self->runtime = swpy_new_ref((PyObject *)runtime);
    self->model = model;
    return 0;
}

static void seg_release(SegmentationObject *self)
{
    if (!self->model)
        return;
    RuntimeObject *rt = rt_of(self);
    /* take the lock with the GIL held, waiting without it so that a run in
     * another thread can finish */
    if (!PyThread_acquire_lock(rt->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(rt->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    backend_alive(self);
    sw_segmentation_destroy(self->model);
    self->model = NULL;
    PyThread_release_lock(rt->lock);
}

static void seg_dealloc(SegmentationObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->runtime)
        seg_release(self);
    Py_CLEAR(self->runtime);
    swpy_type_free((PyObject *)self);
    Py_DECREF(tp);
}

static int seg_traverse(SegmentationObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->runtime);
    return 0;
}

static PyObject *seg_close(SegmentationObject *self, PyObject *unused)
{
    if (self->runtime)
        seg_release(self);
    Py_RETURN_NONE;
}

static PyObject *seg_enter(PyObject *self, PyObject *unused)
{
    return swpy_new_ref((PyObject *)self);
}

static PyObject *seg_exit(SegmentationObject *self, PyObject *args)
{
    if (self->runtime)
        seg_release(self);
    Py_RETURN_FALSE;
}

static PyObject *seg_run(SegmentationObject *self, PyObject *arg)
{
    if (!self->model) {
        PyErr_SetString(SwModelError, "this SegmentationModel is closed");
        return NULL;
    }
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
    sw_error err = {SW_OK, ""};
    RuntimeObject *rt = rt_of(self);
    const float *src = PyArray_DATA(wave);
    float *dst = PyArray_DATA((PyArrayObject *)out);
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(rt->lock, WAIT_LOCK);
    if (!backend_alive(self))
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime of this SegmentationModel was closed");
    else
        sw_segmentation_run(self->model, src, (int)batch, samples, dst, &err);
    PyThread_release_lock(rt->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(wave);
    if (err.code != SW_OK) {
        Py_DECREF(out);
        return swpy_raise(&err, NULL);
    }
    return out;
}

static PyObject *seg_get_closed(SegmentationObject *self, void *closure)
{
    return PyBool_FromLong(self->model == NULL);
}

static PyObject *segmentation_frames(PyObject *unused, PyObject *arg)
{
    long long samples = PyLong_AsLongLong(arg);
    if (samples == -1 && PyErr_Occurred())
        return NULL;
    return PyLong_FromLongLong(samples < 0 ? 0 : (long long)sw_segmentation_frames(samples));
}

#define CF(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef seg_methods[] = {
    {"run", CF(seg_run), METH_O,
     "run(waveforms float32 [batch, samples] or [samples]) -> log-probabilities float32 "
     "[batch, frames, 7]"},
    {"close", CF(seg_close), METH_NOARGS, "Free the weights; idempotent."},
    {"__enter__", CF(seg_enter), METH_NOARGS, NULL},
    {"__exit__", CF(seg_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef seg_getset[] = {
    {"closed", (getter)seg_get_closed, NULL, "whether close() ran", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot seg_slots[] = {
    {Py_tp_doc, "SegmentationModel(runtime, tensors: dict[str, ndarray])\n\n"
                "pyannote's segmentation-3.0 network on the runtime's device; tensor names and "
                "shapes as in docs/segmentation.md."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, seg_init},
    {Py_tp_dealloc, seg_dealloc},
    {Py_tp_traverse, seg_traverse},
    {Py_tp_methods, seg_methods},
    {Py_tp_getset, seg_getset},
    {0, NULL},
};

static PyType_Spec seg_spec = {
    "saywho._core.SegmentationModel",
    sizeof(SegmentationObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    seg_slots,
};

/* saywho._core.CamppModel: the CAM++ speaker encoder, with the same life
 * cycle as SegmentationModel. */
typedef struct {
    PyObject_HEAD PyObject *runtime; /* RuntimeObject */
    sw_campp *model;
} CamppObject;

static RuntimeObject *campp_rt(CamppObject *m)
{
    return (RuntimeObject *)m->runtime;
}

static int campp_alive(CamppObject *m)
{
    if (m->model && campp_rt(m)->backend != sw_campp_backend(m->model)) {
        sw_campp_backend_lost(m->model);
        return 0;
    }
    return m->model != NULL;
}

static int campp_init(CamppObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"runtime", "tensors", NULL};
    PyObject *runtime, *tensors;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:CamppModel", kwlist, &runtime, &tensors))
        return -1;
    if (self->runtime) {
        PyErr_SetString(PyExc_RuntimeError, "CamppModel is already initialised");
        return -1;
    }
    int is_rt = PyObject_IsInstance(runtime, runtime_type);
    if (is_rt <= 0) {
        if (is_rt == 0)
            PyErr_SetString(PyExc_TypeError, "runtime must be a saywho._core.Runtime");
        return -1;
    }
    RuntimeObject *rt = (RuntimeObject *)runtime;
    if (!rt->backend) {
        PyErr_SetString(SwDeviceError, "the Runtime is closed");
        return -1;
    }
    held_tensors h;
    if (hold_tensors(tensors, &h) != 0) {
        held_free(&h);
        return -1;
    }
    sw_error err = {SW_OK, ""};
    sw_campp *model = NULL;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(rt->lock, WAIT_LOCK);
    if (!rt->backend)
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime was closed");
    else
        sw_campp_create(rt->backend, h.t, (int)h.n, &model, &err);
    PyThread_release_lock(rt->lock);
    Py_END_ALLOW_THREADS
    held_free(&h);
    if (err.code != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    Py_INCREF(runtime); /* Py_NewRef is not in Python 3.9's limited API */
    self->runtime = runtime;
    self->model = model;
    return 0;
}

static void campp_release(CamppObject *self)
{
    if (!self->model)
        return;
    RuntimeObject *rt = campp_rt(self);
    /* take the lock with the GIL held, waiting without it so that a run in
     * another thread can finish */
    if (!PyThread_acquire_lock(rt->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(rt->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    campp_alive(self);
    sw_campp_destroy(self->model);
    self->model = NULL;
    PyThread_release_lock(rt->lock);
}

static void campp_dealloc(CamppObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->runtime)
        campp_release(self);
    Py_CLEAR(self->runtime);
    swpy_type_free((PyObject *)self);
    Py_DECREF(tp);
}

static int campp_traverse(CamppObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->runtime);
    return 0;
}

static PyObject *campp_close(CamppObject *self, PyObject *unused)
{
    if (self->runtime)
        campp_release(self);
    Py_RETURN_NONE;
}

static PyObject *campp_enter(PyObject *self, PyObject *unused)
{
    Py_INCREF(self);
    return self;
}

static PyObject *campp_exit(CamppObject *self, PyObject *args)
{
    if (self->runtime)
        campp_release(self);
    Py_RETURN_FALSE;
}

static PyObject *campp_run(CamppObject *self, PyObject *arg)
{
    if (!self->model) {
        PyErr_SetString(SwModelError, "this CamppModel is closed");
        return NULL;
    }
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
    sw_error err = {SW_OK, ""};
    RuntimeObject *rt = campp_rt(self);
    const float *src = PyArray_DATA(feat);
    float *dst = PyArray_DATA((PyArrayObject *)out);
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(rt->lock, WAIT_LOCK);
    if (!campp_alive(self))
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime of this CamppModel was closed");
    else
        sw_campp_run(self->model, src, (int)batch, frames, dst, &err);
    PyThread_release_lock(rt->lock);
    Py_END_ALLOW_THREADS
    Py_DECREF(feat);
    if (err.code != SW_OK) {
        Py_DECREF(out);
        return swpy_raise(&err, NULL);
    }
    return out;
}

static PyObject *campp_get_closed(CamppObject *self, void *closure)
{
    return PyBool_FromLong(self->model == NULL);
}

static PyMethodDef campp_methods[] = {
    {"run", CF(campp_run), METH_O,
     "run(features float32 [batch, frames, 80]) -> embeddings float32 [batch, 192]"},
    {"close", CF(campp_close), METH_NOARGS, "Free the weights; idempotent."},
    {"__enter__", CF(campp_enter), METH_NOARGS, NULL},
    {"__exit__", CF(campp_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef campp_getset[] = {
    {"closed", (getter)campp_get_closed, NULL, "whether close() ran", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot campp_slots[] = {
    {Py_tp_doc, "CamppModel(runtime, tensors: dict[str, ndarray])\n\n"
                "3D-Speaker's CAM++ speaker encoder on the runtime's device; tensor names and "
                "shapes as in docs/campp.md (saywho.diarization.embedding_campp prepares them)."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, campp_init},
    {Py_tp_dealloc, campp_dealloc},
    {Py_tp_traverse, campp_traverse},
    {Py_tp_methods, campp_methods},
    {Py_tp_getset, campp_getset},
    {0, NULL},
};

static PyType_Spec campp_spec = {
    "saywho._core.CamppModel",
    sizeof(CamppObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    campp_slots,
};

static PyMethodDef diar_functions[] = {
    {"segmentation_frames", segmentation_frames, METH_O,
     "segmentation_frames(samples) -> output frames of the segmentation network (0 if too few)"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_diar(PyObject *m)
{
    runtime_type = PyObject_GetAttrString(m, "Runtime");
    if (!runtime_type)
        return -1;
    if (PyModule_AddFunctions(m, diar_functions) != 0)
        return -1;
    PyObject *t = PyType_FromSpec(&seg_spec);
    if (!t)
        return -1;
    if (PyModule_AddObject(m, "SegmentationModel", t) != 0) {
        Py_DECREF(t);
        return -1;
    }
    t = PyType_FromSpec(&campp_spec);
    if (!t)
        return -1;
    if (PyModule_AddObject(m, "CamppModel", t) != 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}
