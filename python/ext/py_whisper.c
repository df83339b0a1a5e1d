/* saywho._core.WhisperModel, EncoderOutput and DecoderState: the Whisper
 * network of csrc/whisper on a Runtime's backend.
 *
 * The model keeps its Runtime alive and runs under the Runtime's lock with the
 * GIL released. Encoder outputs and decoder states keep the model alive; the
 * model keeps a list of them (borrowed) so that model.close() can free them
 * first, and an encoder output's close() frees the states that read it. If the
 * Runtime is closed under a model, its pool has already taken every block
 * back, and the objects only free their host memory. The model's own life
 * cycle is py_model.h's, which every model type of the extension shares. */
#include "py_model.h"

#include <string.h>

#include "py_whisper.h"
#include "whisper_compute.h"
#include "whisper_model.h"

typedef struct WhisperChild WhisperChild;

typedef struct {
    ModelObject base; /* runtime, model (sw_whisper), kind: py_model.h */
    WhisperChild *children;
    PyObject *dims;
    /* the arrays a CPU model computes from where they lie (its float16
     * matrices, sw_whisper_create_borrowing): held until the model is freed */
    swpy_tensors held;
} WhisperModelObject;

enum { CHILD_AUDIO, CHILD_STATE };

/* EncoderOutput and DecoderState share this layout. */
struct WhisperChild {
    PyObject_HEAD WhisperModelObject *owner;
    WhisperChild *prev, *next;
    int kind;
    void *ptr;           /* sw_whisper_audio or sw_whisper_state */
    WhisperChild *audio; /* a state: the EncoderOutput it reads (strong reference) */
};

static PyTypeObject *model_type, *audio_type, *state_type;

/* ---- the Runtime's lock ---- */

static RuntimeObject *rt_of(WhisperModelObject *m)
{
    return (RuntimeObject *)m->base.runtime;
}

static sw_whisper *whisper_of(WhisperModelObject *m)
{
    return m->base.model;
}

/* With the lock held: has the Runtime been closed under the model? */
static int backend_alive(WhisperModelObject *m)
{
    return swpy_model_alive(&m->base);
}

/* ---- children ---- */

static void child_link(WhisperModelObject *m, WhisperChild *c)
{
    c->owner = (WhisperModelObject *)swpy_new_ref((PyObject *)m);
    c->next = m->children;
    c->prev = NULL;
    if (m->children)
        m->children->prev = c;
    m->children = c;
}

/* With the lock held: frees the C object (and for an audio, the states that
 * read it first); the Python object stays, closed. */
static void child_free_locked(WhisperChild *c)
{
    if (!c->ptr)
        return;
    WhisperModelObject *m = c->owner;
    backend_alive(m);
    if (c->kind == CHILD_AUDIO)
        for (WhisperChild *o = m->children; o; o = o->next)
            if (o->kind == CHILD_STATE && o->audio == c)
                child_free_locked(o);
    if (c->kind == CHILD_AUDIO)
        sw_whisper_audio_free(c->ptr);
    else
        sw_whisper_state_free(c->ptr);
    c->ptr = NULL;
}

static void child_close(WhisperChild *c)
{
    if (!c->ptr)
        return;
    RuntimeObject *rt = rt_of(c->owner);
    swpy_runtime_lock(rt);
    child_free_locked(c);
    PyThread_release_lock(rt->lock);
}

static void child_dealloc(WhisperChild *c)
{
    PyTypeObject *tp = Py_TYPE(c);
    PyObject_GC_UnTrack(c);
    if (c->owner) {
        child_close(c);
        if (c->prev)
            c->prev->next = c->next;
        else
            c->owner->children = c->next;
        if (c->next)
            c->next->prev = c->prev;
    }
    Py_CLEAR(c->audio);
    Py_CLEAR(c->owner);
    swpy_type_free((PyObject *)c);
    Py_DECREF(tp);
}

static int child_traverse(WhisperChild *c, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(c));
    Py_VISIT(c->owner);
    Py_VISIT(c->audio);
    return 0;
}

static WhisperChild *child_new(PyTypeObject *tp, WhisperModelObject *m, int kind, void *ptr)
{
    WhisperChild *c = PyObject_GC_New(WhisperChild, tp);
    if (!c)
        return NULL;
    c->kind = kind;
    c->ptr = ptr;
    c->audio = NULL;
    child_link(m, c);
    PyObject_GC_Track(c);
    return c;
}

static PyObject *child_close_py(WhisperChild *c, PyObject *unused)
{
    child_close(c);
    Py_RETURN_NONE;
}

static PyObject *child_enter(PyObject *self, PyObject *unused)
{
    return swpy_new_ref((PyObject *)self);
}

static PyObject *child_exit(WhisperChild *c, PyObject *args)
{
    child_close(c);
    Py_RETURN_FALSE;
}

static PyObject *child_get_closed(WhisperChild *c, void *closure)
{
    return PyBool_FromLong(c->ptr == NULL);
}

static int child_open(WhisperChild *c, const char *what)
{
    if (!c->ptr || !whisper_of(c->owner)) {
        PyErr_Format(SwModelError, "this %s is closed", what);
        return -1;
    }
    return 0;
}

/* ---- WhisperModel ---- */

static const char *dim_names[] = {"n_mels",        "n_audio_ctx", "n_audio_state", "n_audio_head",
                                  "n_audio_layer", "n_vocab",     "n_text_ctx",    "n_text_state",
                                  "n_text_head",   "n_text_layer"};

static int parse_dims(PyObject *dims, sw_whisper_dims *out)
{
    int *fields[] = {&out->n_mels,       &out->n_audio_ctx,   &out->n_audio_state,
                     &out->n_audio_head, &out->n_audio_layer, &out->n_vocab,
                     &out->n_text_ctx,   &out->n_text_state,  &out->n_text_head,
                     &out->n_text_layer};
    if (!PyMapping_Check(dims)) {
        PyErr_SetString(SwModelError, "dims must be a mapping of Whisper's dimensions");
        return -1;
    }
    for (int i = 0; i < 10; i++) {
        PyObject *v = PyMapping_GetItemString(dims, dim_names[i]);
        if (!v) {
            PyErr_Clear();
            PyErr_Format(SwModelError, "dims is missing '%s'", dim_names[i]);
            return -1;
        }
        long x = PyLong_AsLong(v);
        Py_DECREF(v);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (x < 1 || x > (1 << 24)) {
            PyErr_Format(SwModelError, "dims['%s'] = %ld is out of range", dim_names[i], x);
            return -1;
        }
        *fields[i] = (int)x;
    }
    return 0;
}

/* The life cycle's parts that are Whisper's own (py_model.h's kind). */
static void destroy_whisper(void *m)
{
    sw_whisper_destroy(m);
}

static void lost_whisper(void *m)
{
    sw_whisper_backend_lost(m);
}

static sw_backend *backend_of_whisper(const void *m)
{
    return sw_whisper_backend(m);
}

/* With the lock held, before the model goes: its states, then the encoder
 * outputs they read. */
static void free_children(ModelObject *base)
{
    WhisperModelObject *self = (WhisperModelObject *)base;
    for (int pass = 0; pass < 2; pass++)
        for (WhisperChild *c = self->children; c; c = c->next)
            if (c->kind == (pass == 0 ? CHILD_STATE : CHILD_AUDIO))
                child_free_locked(c);
}

static void free_held(ModelObject *base)
{
    swpy_tensors_free(&((WhisperModelObject *)base)->held);
}

static const swpy_model_kind whisper_kind = {
    "WhisperModel",     NULL,          destroy_whisper, lost_whisper,
    backend_of_whisper, free_children, free_held,
};

typedef struct create_call {
    const sw_whisper_dims *dims;
    const swpy_tensors *held;
    sw_whisper_compute compute;
} create_call;

static void create_whisper(void *ctx, sw_backend *be, void **out, sw_error *err)
{
    const create_call *c = ctx;
    sw_whisper_create_borrowing(be, c->dims, c->held->t, (int)c->held->n, c->compute,
                                (sw_whisper **)out, err);
}

static int model_init(WhisperModelObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"runtime", "dims", "tensors", "compute_type", NULL};
    PyObject *runtime, *dims, *tensors;
    const char *compute_type = "float32";
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|s:WhisperModel", kwlist, &runtime, &dims,
                                     &tensors, &compute_type))
        return -1;
    sw_whisper_compute compute;
    sw_error err = {SW_OK, ""};
    if (sw_whisper_compute_parse(compute_type, &compute, &err) != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    sw_whisper_dims d;
    if (parse_dims(dims, &d) != 0)
        return -1;
    swpy_tensors h;
    if (swpy_tensors_hold(tensors, &h) != 0) {
        swpy_tensors_free(&h);
        return -1;
    }
    create_call c = {&d, &h, compute};
    if (swpy_model_bind(&self->base, runtime, &whisper_kind, create_whisper, &c) != 0) {
        swpy_tensors_free(&h);
        return -1;
    }
    if (sw_whisper_backend(whisper_of(self))->kind == SW_DEVICE_CPU)
        self->held = h; /* let go after the model, in free_held */
    else
        swpy_tensors_free(&h); /* a GPU model has its own copy */
    self->dims = PyDict_New();
    const int vals[10] = {d.n_mels,        d.n_audio_ctx, d.n_audio_state, d.n_audio_head,
                          d.n_audio_layer, d.n_vocab,     d.n_text_ctx,    d.n_text_state,
                          d.n_text_head,   d.n_text_layer};
    for (int i = 0; self->dims && i < 10; i++) {
        PyObject *v = PyLong_FromLong(vals[i]);
        if (!v || PyDict_SetItemString(self->dims, dim_names[i], v) != 0) {
            Py_XDECREF(v);
            Py_CLEAR(self->dims);
            return -1;
        }
        Py_DECREF(v);
    }
    return self->dims ? 0 : -1;
}

static void model_dealloc(WhisperModelObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->dims);
    swpy_model_dealloc(&self->base); /* children hold a reference: none is left here */
}

static int model_traverse(WhisperModelObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->dims);
    return swpy_model_traverse(&self->base, visit, arg);
}

static int model_open(WhisperModelObject *self)
{
    return swpy_model_open(&self->base) ? 0 : -1;
}

static int run_locked(WhisperModelObject *m, swpy_locked_fn fn, void *ctx)
{
    return swpy_model_run(&m->base, fn, ctx);
}

typedef struct encode_call {
    sw_whisper *model;
    const float *mel;
    int batch;
    sw_whisper_audio *audio;
} encode_call;

static void do_encode(void *ctx, sw_error *err)
{
    encode_call *c = ctx;
    sw_whisper_encode(c->model, c->mel, c->batch, &c->audio, err);
}

static PyObject *model_encode(WhisperModelObject *self, PyObject *arg)
{
    if (model_open(self))
        return NULL;
    const sw_whisper_dims *d = sw_whisper_get_dims(whisper_of(self));
    PyArrayObject *mel = swpy_float32_array(arg, "mel", 2, 3);
    if (!mel)
        return NULL;
    int nd = PyArray_NDIM(mel);
    npy_intp batch = nd == 3 ? PyArray_DIM(mel, 0) : 1;
    if (PyArray_DIM(mel, nd - 2) != d->n_mels || PyArray_DIM(mel, nd - 1) != 2 * d->n_audio_ctx ||
        batch < 1 || batch > 4096) {
        PyErr_Format(SwOptionError,
                     "mel must be [batch, %d, %d] or [%d, %d] (30 s of log-mel frames)", d->n_mels,
                     2 * d->n_audio_ctx, d->n_mels, 2 * d->n_audio_ctx);
        Py_DECREF(mel);
        return NULL;
    }
    encode_call c = {whisper_of(self), PyArray_DATA(mel), (int)batch, NULL};
    int rc = run_locked(self, do_encode, &c);
    Py_DECREF(mel);
    if (rc != 0)
        return NULL;
    WhisperChild *out = child_new(audio_type, self, CHILD_AUDIO, c.audio);
    if (!out) {
        RuntimeObject *rt = rt_of(self);
        swpy_runtime_lock(rt);
        backend_alive(self);
        sw_whisper_audio_free(c.audio);
        PyThread_release_lock(rt->lock);
    }
    return (PyObject *)out;
}

static WhisperChild *as_audio(WhisperModelObject *self, PyObject *obj)
{
    if (!PyObject_TypeCheck(obj, audio_type)) {
        PyErr_SetString(PyExc_TypeError, "expected an EncoderOutput from WhisperModel.encode");
        return NULL;
    }
    WhisperChild *c = (WhisperChild *)obj;
    if (c->owner != self) {
        PyErr_SetString(SwOptionError, "this EncoderOutput comes from another WhisperModel");
        return NULL;
    }
    return child_open(c, "EncoderOutput") ? NULL : c;
}

typedef struct download_call {
    sw_backend *be;
    const sw_tensor *t;
    void *dst;
} download_call;

static void do_download(void *ctx, sw_error *err)
{
    download_call *c = ctx;
    c->be->download(c->be, c->dst, c->t->data, sw_tensor_nbytes(c->t), err);
}

static PyObject *download_tensor(WhisperModelObject *m, const sw_tensor *t)
{
    npy_intp dims[SW_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        dims[i] = (npy_intp)t->shape[i];
    PyObject *out = PyArray_SimpleNew(t->ndim, dims, NPY_FLOAT32);
    if (!out)
        return NULL;
    download_call c = {sw_whisper_backend(whisper_of(m)), t, PyArray_DATA((PyArrayObject *)out)};
    if (run_locked(m, do_download, &c) != 0)
        Py_CLEAR(out);
    return out;
}

static PyObject *model_encoder_output_numpy(WhisperModelObject *self, PyObject *arg)
{
    if (model_open(self))
        return NULL;
    WhisperChild *a = as_audio(self, arg);
    if (!a)
        return NULL;
    return download_tensor(self, sw_whisper_audio_features(a->ptr));
}

typedef struct state_call {
    sw_whisper *model;
    const sw_whisper_audio *audio;
    int n;
    sw_whisper_state *state;
} state_call;

static void do_new_state(void *ctx, sw_error *err)
{
    state_call *c = ctx;
    sw_whisper_state_new(c->model, c->audio, c->n, &c->state, err);
}

static PyObject *model_new_state(WhisperModelObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"encoder_output", "n_sequences", NULL};
    PyObject *enc;
    int n = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|i:new_state", kwlist, &enc, &n))
        return NULL;
    if (model_open(self))
        return NULL;
    WhisperChild *a = as_audio(self, enc);
    if (!a)
        return NULL;
    state_call c = {whisper_of(self), a->ptr, n > 0 ? n : sw_whisper_audio_batch(a->ptr), NULL};
    if (run_locked(self, do_new_state, &c) != 0)
        return NULL;
    WhisperChild *out = child_new(state_type, self, CHILD_STATE, c.state);
    if (!out) {
        RuntimeObject *rt = rt_of(self);
        swpy_runtime_lock(rt);
        backend_alive(self);
        sw_whisper_state_free(c.state);
        PyThread_release_lock(rt->lock);
        return NULL;
    }
    out->audio = (WhisperChild *)swpy_new_ref((PyObject *)a);
    return (PyObject *)out;
}

static PyObject *model_get_dims(WhisperModelObject *self, void *closure)
{
    if (!self->dims)
        Py_RETURN_NONE;
    return PyDict_Copy(self->dims);
}

/* ---- DecoderState ---- */

typedef struct decode_call {
    sw_whisper_state *state;
    const int32_t *tokens;
    int n_seq, n_tok;
    float *logits;
} decode_call;

static void do_decode(void *ctx, sw_error *err)
{
    decode_call *c = ctx;
    sw_whisper_decode(c->state, c->tokens, c->n_seq, c->n_tok, c->logits, err);
}

static PyObject *state_decode(WhisperChild *self, PyObject *arg)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    PyArrayObject *tok = (PyArrayObject *)PyArray_FROMANY(
        arg, NPY_INT32, 2, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!tok) {
        PyErr_Clear();
        PyErr_SetString(SwOptionError, "tokens must be an int32 array [n_sequences, n_tokens]");
        return NULL;
    }
    const sw_whisper_dims *d = sw_whisper_get_dims(whisper_of(self->owner));
    npy_intp dims[2] = {PyArray_DIM(tok, 0), d->n_vocab};
    if (PyArray_DIM(tok, 0) > 1 << 20 || PyArray_DIM(tok, 1) > 1 << 20) {
        Py_DECREF(tok);
        PyErr_SetString(SwOptionError, "too many tokens");
        return NULL;
    }
    PyObject *logits = PyArray_SimpleNew(2, dims, NPY_FLOAT32);
    if (!logits) {
        Py_DECREF(tok);
        return NULL;
    }
    decode_call c = {self->ptr, PyArray_DATA(tok), (int)PyArray_DIM(tok, 0),
                     (int)PyArray_DIM(tok, 1), PyArray_DATA((PyArrayObject *)logits)};
    if (run_locked(self->owner, do_decode, &c) != 0)
        Py_CLEAR(logits);
    Py_DECREF(tok);
    return logits;
}

typedef struct reorder_call {
    sw_whisper_state *state;
    const int *index;
    int n;
} reorder_call;

static void do_reorder(void *ctx, sw_error *err)
{
    reorder_call *c = ctx;
    sw_whisper_state_reorder(c->state, c->index, c->n, err);
}

static PyObject *state_reorder(WhisperChild *self, PyObject *arg)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    PyArrayObject *idx = (PyArrayObject *)PyArray_FROMANY(
        arg, NPY_INT, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!idx) {
        PyErr_Clear();
        PyErr_SetString(SwOptionError, "indices must be a 1-D sequence of ints");
        return NULL;
    }
    reorder_call c = {self->ptr, PyArray_DATA(idx), (int)PyArray_DIM(idx, 0)};
    int rc = run_locked(self->owner, do_reorder, &c);
    Py_DECREF(idx);
    if (rc != 0)
        return NULL;
    Py_RETURN_NONE;
}

typedef struct copy_call {
    sw_whisper_state *dst;
    const sw_whisper_state *src;
    const int *index;
    int n;
} copy_call;

static void do_copy(void *ctx, sw_error *err)
{
    copy_call *c = ctx;
    sw_whisper_state_copy(c->dst, c->src, c->index, c->n, err);
}

static PyObject *state_copy_from(WhisperChild *self, PyObject *args)
{
    PyObject *src_obj, *idx_obj;
    if (child_open(self, "DecoderState") ||
        !PyArg_ParseTuple(args, "OO:copy_from", &src_obj, &idx_obj))
        return NULL;
    if (!PyObject_TypeCheck(src_obj, state_type)) {
        PyErr_SetString(PyExc_TypeError, "copy_from: the source must be a DecoderState");
        return NULL;
    }
    WhisperChild *src = (WhisperChild *)src_obj;
    if (child_open(src, "DecoderState"))
        return NULL;
    if (src->owner != self->owner) {
        PyErr_SetString(SwOptionError, "copy_from: the source belongs to another model");
        return NULL;
    }
    PyArrayObject *idx = (PyArrayObject *)PyArray_FROMANY(
        idx_obj, NPY_INT, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!idx) {
        PyErr_Clear();
        PyErr_SetString(SwOptionError, "indices must be a 1-D sequence of ints");
        return NULL;
    }
    copy_call c = {self->ptr, src->ptr, PyArray_DATA(idx), (int)PyArray_DIM(idx, 0)};
    int rc = run_locked(self->owner, do_copy, &c);
    Py_DECREF(idx);
    if (rc != 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *state_reset(WhisperChild *self, PyObject *unused)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    sw_whisper_state_reset(self->ptr);
    Py_RETURN_NONE;
}

static PyObject *state_set_capture(WhisperChild *self, PyObject *arg)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    sw_whisper_state_capture_cross_attention(self->ptr, on);
    Py_RETURN_NONE;
}

static PyObject *state_cross_attention(WhisperChild *self, PyObject *arg)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    int layer = PyLong_AsLong(arg);
    if (layer == -1 && PyErr_Occurred())
        return NULL;
    const sw_tensor *t = sw_whisper_state_cross_attention(self->ptr, layer);
    if (!t)
        Py_RETURN_NONE;
    return download_tensor(self->owner, t);
}

static PyObject *state_get_length(WhisperChild *self, void *closure)
{
    if (child_open(self, "DecoderState"))
        return NULL;
    return PyLong_FromLong(sw_whisper_state_length(self->ptr));
}

static PyObject *audio_numpy(WhisperChild *self, PyObject *unused)
{
    if (child_open(self, "EncoderOutput"))
        return NULL;
    return download_tensor(self->owner, sw_whisper_audio_features(self->ptr));
}

static PyObject *audio_get_batch(WhisperChild *self, void *closure)
{
    if (child_open(self, "EncoderOutput"))
        return NULL;
    return PyLong_FromLong(sw_whisper_audio_batch(self->ptr));
}

/* ---- types ---- */

#define KW    (METH_VARARGS | METH_KEYWORDS)
#define CF(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef model_methods[] = {
    {"encode", CF(model_encode), METH_O,
     "encode(mel [batch, n_mels, 3000] or [n_mels, 3000]) -> EncoderOutput"},
    {"encoder_output_numpy", CF(model_encoder_output_numpy), METH_O,
     "encoder_output_numpy(enc) -> float32 [batch, n_audio_ctx, n_audio_state]"},
    {"new_state", CF(model_new_state), KW,
     "new_state(encoder_output, n_sequences=batch) -> DecoderState"},
    {"close", CF(swpy_model_close), METH_NOARGS,
     "Free the weights and every EncoderOutput and DecoderState; idempotent."},
    {"__enter__", CF(swpy_model_enter), METH_NOARGS, NULL},
    {"__exit__", CF(swpy_model_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *model_get_mapped_bytes(WhisperModelObject *self, void *closure)
{
    return PyLong_FromSize_t(sw_whisper_borrowed_bytes(whisper_of(self)));
}

static PyGetSetDef model_getset[] = {
    {"dims", (getter)model_get_dims, NULL, "the model's dimensions", NULL},
    SWPY_MODEL_GETSET,
    {"mapped_bytes", (getter)model_get_mapped_bytes, NULL,
     "bytes of the given float16 arrays the model computes from where they lie (CPU): a "
     "memory-mapped file's pages, not the Runtime's pool; 0 once closed",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot model_slots[] = {
    {Py_tp_doc, "WhisperModel(runtime, dims: dict, tensors: dict[str, ndarray])\n\n"
                "Whisper's encoder and decoder on the runtime's device; tensors use OpenAI's "
                "state-dict names, float32 or float16."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, model_init},
    {Py_tp_dealloc, model_dealloc},
    {Py_tp_traverse, model_traverse},
    {Py_tp_methods, model_methods},
    {Py_tp_getset, model_getset},
    {0, NULL},
};

static PyType_Spec model_spec = {
    "saywho._core.WhisperModel",
    sizeof(WhisperModelObject),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    model_slots,
};

static PyMethodDef audio_methods[] = {
    {"numpy", CF(audio_numpy), METH_NOARGS, "the encoder output as float32 [batch, ctx, d]"},
    {"close", CF(child_close_py), METH_NOARGS, "Free it and the states that read it."},
    {"__enter__", CF(child_enter), METH_NOARGS, NULL},
    {"__exit__", CF(child_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef audio_getset[] = {
    {"batch", (getter)audio_get_batch, NULL, "audio items encoded", NULL},
    {"closed", (getter)child_get_closed, NULL, "whether close() ran", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Encoder outputs and decoder states come only from a model's methods
 * (Py_TPFLAGS_DISALLOW_INSTANTIATION is not in Python 3.9's limited API). */
static PyObject *child_no_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    PyErr_SetString(PyExc_TypeError, "EncoderOutput and DecoderState come from a WhisperModel's "
                                     "methods; they cannot be created directly");
    return NULL;
}

static PyType_Slot audio_slots[] = {
    {Py_tp_doc, "EncoderOutput: the encoded audio and its cross-attention keys and values."},
    {Py_tp_new, child_no_new},
    {Py_tp_dealloc, child_dealloc},
    {Py_tp_traverse, child_traverse},
    {Py_tp_methods, audio_methods},
    {Py_tp_getset, audio_getset},
    {0, NULL},
};

static PyType_Spec audio_spec = {
    "saywho._core.EncoderOutput",
    sizeof(WhisperChild),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    audio_slots,
};

static PyMethodDef state_methods[] = {
    {"decode", CF(state_decode), METH_O,
     "decode(tokens int32 [n_sequences, n]) -> logits float32 [n_sequences, n_vocab] of the "
     "last position; appends the tokens to the cache"},
    {"reorder", CF(state_reorder), METH_O,
     "reorder(indices): sequence s continues the cache of sequence indices[s]"},
    {"copy_from", CF(state_copy_from), METH_VARARGS,
     "copy_from(source, indices): sequence s continues the cache of the source's sequence "
     "indices[s] (a DecoderState of the same model reading the same EncoderOutput)"},
    {"reset", CF(state_reset), METH_NOARGS, "forget the cache"},
    {"capture_cross_attention", CF(state_set_capture), METH_O,
     "capture_cross_attention(on): keep each decode's cross-attention weights"},
    {"cross_attention", CF(state_cross_attention), METH_O,
     "cross_attention(layer) -> float32 [n_sequences, heads, n_tokens, n_audio_ctx] of the "
     "last decode, or None"},
    {"close", CF(child_close_py), METH_NOARGS, "Free the cache; idempotent."},
    {"__enter__", CF(child_enter), METH_NOARGS, NULL},
    {"__exit__", CF(child_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef state_getset[] = {
    {"length", (getter)state_get_length, NULL, "tokens in the cache", NULL},
    {"closed", (getter)child_get_closed, NULL, "whether close() ran", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot state_slots[] = {
    {Py_tp_doc, "DecoderState: the decoder's KV cache for n_sequences sequences."},
    {Py_tp_new, child_no_new},
    {Py_tp_dealloc, child_dealloc},
    {Py_tp_traverse, child_traverse},
    {Py_tp_methods, state_methods},
    {Py_tp_getset, state_getset},
    {0, NULL},
};

static PyType_Spec state_spec = {
    "saywho._core.DecoderState",
    sizeof(WhisperChild),
    0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    state_slots,
};

static int add_type(PyObject *m, PyType_Spec *spec, PyTypeObject **slot)
{
    PyObject *t = PyType_FromSpec(spec);
    if (!t)
        return -1;
    *slot = (PyTypeObject *)swpy_new_ref((PyObject *)t);
    if (PyModule_AddObject(m, strrchr(spec->name, '.') + 1, t) != 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

int swpy_init_whisper(PyObject *m)
{
    if (add_type(m, &model_spec, &model_type) || add_type(m, &audio_spec, &audio_type) ||
        add_type(m, &state_spec, &state_type))
        return -1;
    return 0;
}

/* ---- for py_whisper_generate.c (py_whisper.h) ---- */

int swpy_is_whisper_model(PyObject *obj)
{
    return PyObject_TypeCheck(obj, model_type);
}

typedef struct lent_call {
    swpy_whisper_fn fn;
    sw_whisper *model;
    const sw_whisper_audio *audio;
    void *ctx;
} lent_call;

static void do_lent(void *ctx, sw_error *err)
{
    lent_call *c = ctx;
    c->fn(c->model, c->audio, c->ctx, err);
}

int swpy_whisper_run(PyObject *model, PyObject *enc, swpy_whisper_fn fn, void *ctx)
{
    if (!swpy_is_whisper_model(model)) {
        PyErr_SetString(PyExc_TypeError, "expected a saywho._core.WhisperModel");
        return -1;
    }
    WhisperModelObject *m = (WhisperModelObject *)model;
    if (model_open(m))
        return -1;
    WhisperChild *a = as_audio(m, enc);
    if (!a)
        return -1;
    lent_call c = {fn, whisper_of(m), a->ptr, ctx};
    return run_locked(m, do_lent, &c);
}
