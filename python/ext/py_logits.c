/* The token choice's per-step math (csrc/whisper/whisper_logits.h). */
#include "py_common.h"

#include "whisper_logits.h"

static PyObject *py_log_softmax_rows(PyObject *self, PyObject *arg)
{
    PyArrayObject *x = (PyArrayObject *)PyArray_FROMANY(
        arg, NPY_FLOAT32, 1, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!x) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(SwOptionError,
                            "log_softmax_rows takes float32 logits [rows, n] or [n]");
        }
        return NULL;
    }
    PyObject *out = PyArray_NewLikeArray(x, NPY_CORDER, NULL, 0);
    if (out) {
        npy_intp n = PyArray_DIM(x, PyArray_NDIM(x) - 1);
        npy_intp rows = n ? PyArray_SIZE(x) / n : 0;
        Py_BEGIN_ALLOW_THREADS
        sw_log_softmax_rows(PyArray_DATA(x), rows, n, PyArray_DATA((PyArrayObject *)out));
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(x);
    return out;
}

static PyMethodDef logits_functions[] = {
    {"log_softmax_rows", py_log_softmax_rows, METH_O,
     "log_softmax_rows(logits [rows, n] float32) -> float32 log-probabilities, rounded as "
     "CTranslate2's CPU kernel rounds them"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_logits(PyObject *module)
{
    return PyModule_AddFunctions(module, logits_functions);
}
