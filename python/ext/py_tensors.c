/* Python dicts of arrays -> sw_named_tensor lists (py_tensors.h). */
#include "py_tensors.h"

void swpy_tensors_free(swpy_tensors *h)
{
    for (Py_ssize_t i = 0; h->refs && i < 2 * h->n; i++)
        Py_XDECREF(h->refs[i]);
    PyMem_Free(h->refs);
    PyMem_Free(h->t);
    memset(h, 0, sizeof *h);
}

int swpy_tensors_hold(PyObject *tensors, swpy_tensors *h)
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
        int type = NPY_FLOAT32;
        if (PyArray_Check(value) && PyArray_TYPE((PyArrayObject *)value) == NPY_FLOAT16)
            type = NPY_FLOAT16;
        /* half arrays may sit at odd addresses in a mapped checkpoint: the
         * core reads them bytewise (widen.h), so they are not copied */
        int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_FORCECAST;
        if (type != NPY_FLOAT16)
            flags |= NPY_ARRAY_ALIGNED;
        PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(value, type, 0, 0, flags);
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
            PyErr_Format(SwModelError, "tensor '%s' has %d dimensions, at most %d expected", name,
                         PyArray_NDIM(arr), SW_MAX_DIMS);
            return -1;
        }
        t->name = name;
        t->dtype = type == NPY_FLOAT16 ? SW_F16 : SW_F32;
        t->ndim = PyArray_NDIM(arr);
        for (int i = 0; i < t->ndim; i++)
            t->shape[i] = PyArray_DIM(arr, i);
        t->data = PyArray_DATA(arr);
    }
    return 0;
}
