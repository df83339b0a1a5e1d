/* The life cycle every core network object of the extension shares
 * (SegmentationModel, CamppModel, ResNet34Model, GE2EModel ...): created on a
 * Runtime from a dict of named arrays, weights uploaded once; it keeps the
 * Runtime alive and runs under the Runtime's lock with the GIL released; if
 * the Runtime is closed under it, its pool has already taken every block back
 * and the model frees only its host memory. close() and `with` free it all. */
#ifndef SWPY_MODEL_H
#define SWPY_MODEL_H

#include "py_runtime.h"
#include "py_tensors.h"

/* What differs between the model types: the core's functions. */
typedef struct swpy_model_kind {
    const char *name; /* the Python type's name, for messages */
    sw_status (*create)(sw_backend *be, const sw_named_tensor *t, int n, void **out, sw_error *err);
    void (*destroy)(void *model);
    void (*backend_lost)(void *model);
    sw_backend *(*backend)(const void *model);
} swpy_model_kind;

typedef struct {
    PyObject_HEAD PyObject *runtime; /* RuntimeObject */
    void *model;
    const swpy_model_kind *kind;
} ModelObject;

/* tp_init's body: (runtime, tensors) -> the model. */
int swpy_model_init(ModelObject *self, PyObject *args, PyObject *kwargs,
                    const swpy_model_kind *kind);

/* Without the GIL, around a run: takes the Runtime's lock and returns the
 * model, or NULL with err set (the Runtime was closed). swpy_model_unlock
 * always follows. */
void *swpy_model_lock(ModelObject *self, sw_error *err);
void swpy_model_unlock(ModelObject *self);

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

/* Registers `spec` as saywho._core.<name>. */
int swpy_model_add_type(PyObject *module, const char *name, PyType_Spec *spec);

#endif
