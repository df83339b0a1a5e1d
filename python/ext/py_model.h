/* The life cycle every core network object of the extension shares
 * (SegmentationModel, CamppModel, ResNet34Model, GE2EModel, SileroModel and
 * WhisperModel): created on a Runtime, weights uploaded once; it keeps the
 * Runtime alive and runs under the Runtime's lock with the GIL released; if
 * the Runtime is closed under it, its pool has already taken every block back
 * and the model frees only its host memory. close() and `with` free it all.
 * A type whose object holds more than ModelObject starts its struct with one. */
#ifndef SWPY_MODEL_H
#define SWPY_MODEL_H

#include "py_runtime.h"
#include "py_tensors.h"

typedef struct ModelObject ModelObject;
typedef struct swpy_model_kind swpy_model_kind;

/* What differs between the model types: the core's functions. */
struct swpy_model_kind {
    const char *name; /* the Python type's name, for messages */
    /* for the (runtime, tensors) constructor of swpy_model_init; a type with
     * other arguments calls swpy_model_bind itself */
    sw_status (*create)(sw_backend *be, const sw_named_tensor *t, int n, void **out, sw_error *err);
    void (*destroy)(void *model);
    void (*backend_lost)(void *model);
    sw_backend *(*backend)(const void *model);
    /* optional, with the lock held before destroy: frees what hangs off the
     * model (Whisper's encoder outputs and decoder states) */
    void (*free_parts)(ModelObject *self);
    /* optional, once the lock is given back (the GIL held): lets go of what
     * the model computed from (a CPU Whisper's memory-mapped arrays) */
    void (*released)(ModelObject *self);
};

struct ModelObject {
    PyObject_HEAD PyObject *runtime; /* RuntimeObject */
    void *model;
    const swpy_model_kind *kind;
};

/* `runtime` as an open saywho._core.Runtime; NULL with TypeError (not a
 * Runtime) or DeviceError (closed). */
RuntimeObject *swpy_open_runtime(PyObject *runtime);

/* Makes the model on `runtime` (checked to be an open saywho._core.Runtime):
 * create(ctx, backend, &model, err) runs without the GIL under the Runtime's
 * lock. 0, or -1 with an exception set. */
typedef void (*swpy_create_fn)(void *ctx, sw_backend *be, void **out, sw_error *err);
int swpy_model_bind(ModelObject *self, PyObject *runtime, const swpy_model_kind *kind,
                    swpy_create_fn create, void *ctx);

/* tp_init's body for (runtime, tensors) -> the model, through kind->create. */
int swpy_model_init(ModelObject *self, PyObject *args, PyObject *kwargs,
                    const swpy_model_kind *kind);

/* Takes the Runtime's lock with the GIL held, waiting without it so that a
 * run in another thread can finish. */
void swpy_runtime_lock(RuntimeObject *rt);

/* With the lock held: whether the model is open and its Runtime still the
 * one it was made on (if not, the model lets go of the lost backend). */
int swpy_model_alive(ModelObject *self);

/* fn(ctx, err) without the GIL and under the Runtime's lock, once the model
 * is known to be alive: the one way a method runs its model (ctx carries the
 * model, read with the GIL, and the call's arguments); 0, or -1 with the
 * exception set (the core's error, or DeviceError if the Runtime was closed). */
typedef void (*swpy_locked_fn)(void *ctx, sw_error *err);
int swpy_model_run(ModelObject *self, swpy_locked_fn fn, void *ctx);

/* The model, or NULL with ModelError "this X is closed". */
void *swpy_model_open(ModelObject *self);

void swpy_model_dealloc(ModelObject *self);
int swpy_model_traverse(ModelObject *self, visitproc visit, void *arg);
PyObject *swpy_model_close(ModelObject *self, PyObject *unused);
PyObject *swpy_model_enter(PyObject *self, PyObject *unused);
PyObject *swpy_model_exit(ModelObject *self, PyObject *args);
PyObject *swpy_model_get_closed(ModelObject *self, void *closure);

/* The methods and properties every model type lists beside its own (a
 * comma follows each where it is used). */
#define SWPY_MODEL_METHODS                                                                         \
    {"close", (PyCFunction)(void (*)(void))swpy_model_close, METH_NOARGS,                          \
     "Free the weights; idempotent."},                                                             \
        {"__enter__", (PyCFunction)(void (*)(void))swpy_model_enter, METH_NOARGS, NULL},           \
    {                                                                                              \
        "__exit__", (PyCFunction)(void (*)(void))swpy_model_exit, METH_VARARGS, NULL               \
    }

#define SWPY_MODEL_GETSET                                                                          \
    {                                                                                              \
        "closed", (getter)swpy_model_get_closed, NULL, "whether close() ran", NULL                 \
    }

/* The properties of a model type that has no others: `closed`. */
extern PyGetSetDef swpy_model_getset[];

/* The kind of a core model type `prefix` whose functions follow the
 * protocol's names (sw_<prefix>_create/_destroy/_backend_lost/_backend), and
 * its tp_init, <prefix>_init. */
#define SWPY_KIND(prefix, type_name)                                                               \
    static sw_status prefix##_create_any(sw_backend *be, const sw_named_tensor *t, int n,          \
                                         void **out, sw_error *err)                                \
    {                                                                                              \
        return sw_##prefix##_create(be, t, n, (sw_##prefix **)out, err);                           \
    }                                                                                              \
    static void prefix##_destroy_any(void *m)                                                      \
    {                                                                                              \
        sw_##prefix##_destroy(m);                                                                  \
    }                                                                                              \
    static void prefix##_lost_any(void *m)                                                         \
    {                                                                                              \
        sw_##prefix##_backend_lost(m);                                                             \
    }                                                                                              \
    static sw_backend *prefix##_backend_any(const void *m)                                         \
    {                                                                                              \
        return sw_##prefix##_backend(m);                                                           \
    }                                                                                              \
    static const swpy_model_kind prefix##_kind = {type_name,                                       \
                                                  prefix##_create_any,                             \
                                                  prefix##_destroy_any,                            \
                                                  prefix##_lost_any,                               \
                                                  prefix##_backend_any,                            \
                                                  NULL,                                            \
                                                  NULL};                                           \
    static int prefix##_init(ModelObject *self, PyObject *args, PyObject *kwargs)                  \
    {                                                                                              \
        return swpy_model_init(self, args, kwargs, &prefix##_kind);                                \
    }

/* The Python type saywho._core.<type_name> of a SWPY_KIND(prefix, ...):
 * <prefix>_spec, from the type's <prefix>_methods and `doc`. */
#define SWPY_MODEL_TYPE(prefix, type_name, doc)                                                    \
    static PyType_Slot prefix##_slots[] = {                                                        \
        {Py_tp_doc, doc},                                                                          \
        {Py_tp_new, PyType_GenericNew},                                                            \
        {Py_tp_init, prefix##_init},                                                               \
        {Py_tp_dealloc, swpy_model_dealloc},                                                       \
        {Py_tp_traverse, swpy_model_traverse},                                                     \
        {Py_tp_methods, prefix##_methods},                                                         \
        {Py_tp_getset, swpy_model_getset},                                                         \
        {0, NULL},                                                                                 \
    };                                                                                             \
    static PyType_Spec prefix##_spec = {                                                           \
        "saywho._core." type_name,                                                                 \
        sizeof(ModelObject),                                                                       \
        0,                                                                                         \
        Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,                                                   \
        prefix##_slots,                                                                            \
    };

/* Registers `spec` as saywho._core.<name>. */
int swpy_model_add_type(PyObject *module, const char *name, PyType_Spec *spec);

#endif
