/* Shared by the translation units of the one extension module saywho._core.
 * Each part (audio, features, runtime) registers its functions and types
 * through a swpy_init_* function called from module.c; the shared helpers
 * are defined in py_helpers.c. */
#ifndef SWPY_COMMON_H
#define SWPY_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL saywho_ARRAY_API
#ifndef SWPY_MODULE_MAIN
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <string.h>

#include "status.h"

/* Exception classes, created by swpy_init_errors (py_helpers.c, which also
 * defines the helpers below). */
extern PyObject *SwError;       /* saywho.SaywhoError */
extern PyObject *SwAudioError;  /* saywho.AudioError */
extern PyObject *SwModelError;  /* saywho.ModelError */
extern PyObject *SwDeviceError; /* saywho.DeviceError */
extern PyObject *SwOptionError; /* saywho.OptionError, also a ValueError */

/* Raises the exception that matches err->code, prefixed by `context` (for
 * audio, the file name) and returns NULL. */
PyObject *swpy_raise(const sw_error *err, const char *context);

/* A C-contiguous float32 array from any array-like; NULL with an exception.
 * ndim_min/ndim_max bound the accepted number of dimensions. */
PyArrayObject *swpy_float32_array(PyObject *obj, const char *what, int ndim_min, int ndim_max);

/* Wraps a malloc'ed float buffer as a NumPy array that frees it. Takes
 * ownership of data in every case (frees it on failure). */
PyObject *swpy_array_from_malloc(float *data, int ndim, const npy_intp *dims);

/* tp_free of the object's own (heap) type: the limited API has no tp_free
 * field to read, only the type's slot table. */
static inline void swpy_type_free(PyObject *self)
{
    freefunc free_fn = (freefunc)PyType_GetSlot(Py_TYPE(self), Py_tp_free);
    free_fn(self);
}

/* Py_NewRef and PyMem_Calloc, which Python 3.9's limited API lacks. */
static inline PyObject *swpy_new_ref(PyObject *obj)
{
    Py_INCREF(obj);
    return obj;
}

static inline void *swpy_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)PY_SSIZE_T_MAX / size)
        return NULL;
    size_t bytes = n * size;
    void *p = PyMem_Malloc(bytes > 0 ? bytes : 1);
    if (p)
        memset(p, 0, bytes);
    return p;
}

int swpy_init_errors(PyObject *module); /* first: the parts raise these */
int swpy_init_audio(PyObject *module);
int swpy_init_features(PyObject *module);
int swpy_init_runtime(PyObject *module);
int swpy_init_whisper(PyObject *module);
int swpy_init_whisper_generate(PyObject *module);
int swpy_init_diar(PyObject *module);
int swpy_init_vad(PyObject *module);
int swpy_init_align(PyObject *module);
int swpy_init_logits(PyObject *module);
int swpy_init_dtw(PyObject *module);
int swpy_init_cluster(PyObject *module);
int swpy_init_cpu(PyObject *module);
int swpy_init_host_memory(PyObject *module);
int swpy_init_compute_types(PyObject *module);

#endif
