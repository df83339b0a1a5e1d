/* Alignment across the edge: word (or segment) times and speaker turns in,
 * one speaker index and one coverage per word out. */
#include "py_common.h"

#include "align.h"

static PyArrayObject *array_of(PyObject *obj, int type, const char *what)
{
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(
        obj, type, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (arr && PyArray_NDIM(arr) != 1) {
        PyErr_Format(SwOptionError, "%s must be one-dimensional, got %d dimensions", what,
                     PyArray_NDIM(arr));
        Py_CLEAR(arr);
    }
    return arr;
}

static PyObject *py_align_spans(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"starts",   "ends",      "turn_starts", "turn_ends",
                             "speakers", "threshold", "tolerance",   NULL};
    PyObject *objs[5];
    sw_align_params p = sw_align_default_params();
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|dd:align_spans", kwlist, &objs[0],
                                     &objs[1], &objs[2], &objs[3], &objs[4], &p.threshold,
                                     &p.tolerance))
        return NULL;
    static const char *names[] = {"starts", "ends", "turn_starts", "turn_ends", "speakers"};
    PyArrayObject *a[5] = {NULL};
    PyObject *speaker = NULL, *coverage = NULL, *result = NULL;
    for (int i = 0; i < 5; i++) {
        if (i == 4 && PyArray_Check(objs[4]) && !PyArray_ISINTEGER((PyArrayObject *)objs[4])) {
            PyErr_SetString(SwOptionError, "speakers must be integers");
            goto done;
        }
        a[i] = array_of(objs[i], i < 4 ? NPY_FLOAT64 : NPY_INT32, names[i]);
        if (!a[i])
            goto done;
    }
    npy_intp nw = PyArray_DIM(a[0], 0), nt = PyArray_DIM(a[2], 0);
    if (PyArray_DIM(a[1], 0) != nw || PyArray_DIM(a[3], 0) != nt || PyArray_DIM(a[4], 0) != nt) {
        PyErr_Format(SwOptionError,
                     "lengths differ: %zd starts, %zd ends; %zd turn starts, %zd turn ends, "
                     "%zd speakers",
                     (Py_ssize_t)nw, (Py_ssize_t)PyArray_DIM(a[1], 0), (Py_ssize_t)nt,
                     (Py_ssize_t)PyArray_DIM(a[3], 0), (Py_ssize_t)PyArray_DIM(a[4], 0));
        goto done;
    }
    speaker = PyArray_SimpleNew(1, &nw, NPY_INT32);
    coverage = PyArray_SimpleNew(1, &nw, NPY_FLOAT64);
    if (!speaker || !coverage)
        goto done;
    sw_error err = {SW_OK, ""};
    Py_BEGIN_ALLOW_THREADS
    sw_align_spans(PyArray_DATA(a[0]), PyArray_DATA(a[1]), (size_t)nw, PyArray_DATA(a[2]),
                   PyArray_DATA(a[3]), PyArray_DATA(a[4]), (size_t)nt, &p,
                   PyArray_DATA((PyArrayObject *)speaker), PyArray_DATA((PyArrayObject *)coverage),
                   &err);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        swpy_raise(&err, "align");
        goto done;
    }
    result = PyTuple_Pack(2, speaker, coverage);

done:
    for (int i = 0; i < 5; i++)
        Py_XDECREF(a[i]);
    Py_XDECREF(speaker);
    Py_XDECREF(coverage);
    return result;
}

static PyMethodDef align_methods[] = {
    {"align_spans", (PyCFunction)(void (*)(void))py_align_spans, METH_VARARGS | METH_KEYWORDS,
     "align_spans(starts, ends, turn_starts, turn_ends, speakers, threshold=0.5, "
     "tolerance=0.1)\n--\n\n"
     "For each span (word or segment), the speaker index whose turns cover most of it, or -1\n"
     "when that speaker covers less than threshold of it, and that speaker's coverage.\n"
     "Spans of zero duration take the turn containing them, or the nearest one within\n"
     "tolerance seconds. Returns (int32 array, float64 array)."},
    {NULL, NULL, 0, NULL},
};

int swpy_init_align(PyObject *module)
{
    return PyModule_AddFunctions(module, align_methods);
}
