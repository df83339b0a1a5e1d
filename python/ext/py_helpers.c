/* The helpers every part of saywho._core shares: the exception classes
 * (created here, once, by swpy_init_errors) and the moves of arrays across
 * the edge. module.c only lists the parts; the parts call these. */
#include "py_common.h"

#include <stdlib.h>

PyObject *SwError;
PyObject *SwAudioError;
PyObject *SwModelError;
PyObject *SwDeviceError;
PyObject *SwOptionError;

PyObject *swpy_raise(const sw_error *err, const char *context)
{
    PyObject *type = SwError;
    switch (err->code) {
    case SW_ERR_AUDIO: type = SwAudioError; break;
    case SW_ERR_MODEL: type = SwModelError; break;
    case SW_ERR_DEVICE: type = SwDeviceError; break;
    case SW_ERR_ARG: type = SwOptionError; break;
    case SW_ERR_NOMEM: type = PyExc_MemoryError; break;
    case SW_ERR_IO: type = SwAudioError; break;
    default: break;
    }
    const char *msg = err->msg[0] ? err->msg : sw_status_name(err->code);
    if (context && context[0])
        PyErr_Format(type, "%s: %s", context, msg);
    else
        PyErr_SetString(type, msg);
    return NULL;
}

PyArrayObject *swpy_float32_array(PyObject *obj, const char *what, int ndim_min, int ndim_max)
{
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(
        obj, NPY_FLOAT32, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!arr)
        return NULL;
    int nd = PyArray_NDIM(arr);
    if (nd < ndim_min || nd > ndim_max) {
        PyErr_Format(SwOptionError, "%s must have %d to %d dimensions, got %d", what, ndim_min,
                     ndim_max, nd);
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

static void free_capsule(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, "saywho.buffer"));
}

PyObject *swpy_array_from_malloc(float *data, int ndim, const npy_intp *dims)
{
    PyObject *arr = PyArray_SimpleNewFromData(ndim, (npy_intp *)dims, NPY_FLOAT32, data);
    if (!arr) {
        free(data);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(data, "saywho.buffer", free_capsule);
    if (!capsule) {
        Py_DECREF(arr);
        free(data);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, capsule) != 0) {
        Py_DECREF(arr); /* the capsule was stolen and is released with it */
        return NULL;
    }
    return arr;
}

static int add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases,
                         const char *doc)
{
    *slot = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    if (!*slot)
        return -1;
    Py_INCREF(*slot);
    if (PyModule_AddObject(m, strrchr(name, '.') + 1, *slot) != 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

int swpy_init_errors(PyObject *m)
{
    if (add_exception(m, &SwError, "saywho.SaywhoError", NULL, "Base class of saywho's errors.") !=
        0)
        return -1;
    PyObject *bases = PyTuple_Pack(2, SwError, PyExc_ValueError);
    if (!bases)
        return -1;
    int rc = add_exception(m, &SwAudioError, "saywho.AudioError", bases,
                           "Audio that cannot be read: missing, empty, corrupt, no audio stream.");
    rc = rc ? rc
            : add_exception(m, &SwOptionError, "saywho.OptionError", bases,
                            "An option or argument out of range.");
    Py_DECREF(bases);
    if (rc != 0)
        return -1;
    if (add_exception(m, &SwModelError, "saywho.ModelError", SwError,
                      "Missing, unknown or mismatched model weights.") != 0)
        return -1;
    bases = PyTuple_Pack(2, SwError, PyExc_RuntimeError);
    if (!bases)
        return -1;
    rc = add_exception(m, &SwDeviceError, "saywho.DeviceError", bases,
                       "The requested device cannot be used.");
    Py_DECREF(bases);
    if (rc != 0)
        return -1;
    return 0;
}
