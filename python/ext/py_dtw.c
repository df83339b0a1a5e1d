/* Word timestamps' DTW (csrc/whisper/whisper_dtw.h). */
#include "py_common.h"

#include "whisper_dtw.h"

static PyObject *py_negative_dtw(PyObject *self, PyObject *arg)
{
    PyArrayObject *x = (PyArrayObject *)PyArray_FROMANY(
        arg, NPY_FLOAT32, 2, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!x) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(SwOptionError, "negative_dtw takes a float32 matrix [tokens, frames]");
        }
        return NULL;
    }
    npy_intp n = PyArray_DIM(x, 0), m = PyArray_DIM(x, 1), room = n + m;
    PyObject *ti = PyArray_SimpleNew(1, &room, NPY_INT32);
    PyObject *tj = PyArray_SimpleNew(1, &room, NPY_INT32);
    PyObject *out = NULL;
    if (ti && tj) {
        sw_error err = {SW_OK, ""};
        int64_t len = 0;
        Py_BEGIN_ALLOW_THREADS
        sw_negative_dtw(PyArray_DATA(x), n, m, PyArray_DATA((PyArrayObject *)ti),
                        PyArray_DATA((PyArrayObject *)tj), &len, &err);
        Py_END_ALLOW_THREADS
        if (err.code != SW_OK)
            swpy_raise(&err, "negative_dtw");
        else
            out = Py_BuildValue("(NN)", PySequence_GetSlice(ti, 0, (Py_ssize_t)len),
                                PySequence_GetSlice(tj, 0, (Py_ssize_t)len));
    }
    Py_XDECREF(ti);
    Py_XDECREF(tj);
    Py_DECREF(x);
    return out;
}

static PyMethodDef dtw_functions[] = {
    {"negative_dtw", py_negative_dtw, METH_O,
     "negative_dtw(matrix [tokens, frames] float32) -> (text indices, time indices): the "
     "cheapest monotonic path through -matrix, ties to the time step (CTranslate2's DTW)"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_dtw(PyObject *module)
{
    return PyModule_AddFunctions(module, dtw_functions);
}
