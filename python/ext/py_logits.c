/* The token choice's per-step math (csrc/whisper/whisper_logits.h,
 * whisper_search.h), one step at a time: generation itself runs whole in
 * the core (py_whisper_generate.c); these let tests check each rule. */
#include "py_common.h"

#include <string.h>

#include "whisper_logits.h"
#include "whisper_search.h"

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

static PyObject *py_topk(PyObject *self, PyObject *args)
{
    PyObject *obj;
    int k;
    if (!PyArg_ParseTuple(args, "Oi:whisper_topk", &obj, &k))
        return NULL;
    PyArrayObject *v = swpy_float32_array(obj, "values", 1, 1);
    if (!v)
        return NULL;
    npy_intp n = PyArray_DIM(v, 0);
    if (k < 1 || k > n || n > 1 << 30) {
        Py_DECREF(v);
        return PyErr_Format(SwOptionError, "top-%d of %ld values", k, (long)n);
    }
    npy_intp dims[1] = {k};
    PyObject *ids = PyArray_SimpleNew(1, dims, NPY_INT32);
    if (ids)
        sw_topk_ct2(PyArray_DATA(v), (int)n, k, PyArray_DATA((PyArrayObject *)ids));
    Py_DECREF(v);
    return ids;
}

static PyArrayObject *int32_ids(PyObject *obj, int ndim, const char *what)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT32, ndim, ndim,
                                                        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                            NPY_ARRAY_FORCECAST);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(SwOptionError, "%s must be int32 ids with %d dimension(s)", what, ndim);
    }
    return a;
}

static int ids_in_range(PyArrayObject *a, int n, const char *what)
{
    const int32_t *d = PyArray_DATA(a);
    for (npy_intp i = 0; i < PyArray_SIZE(a); i++)
        if (d[i] < 0 || d[i] >= n) {
            PyErr_Format(SwOptionError, "%s: id %d is outside 0..%d", what, (int)d[i], n - 1);
            return -1;
        }
    return 0;
}

static PyObject *py_rules(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"logits",
                             "step",
                             "sequences",
                             "sample_begin",
                             "suppress",
                             "suppress_begin",
                             "repetition_penalty",
                             "no_repeat_ngram_size",
                             "timestamps",
                             NULL};
    PyObject *logits_obj, *seq_obj = Py_None, *sup_obj = NULL, *begin_obj = NULL;
    int step, ngram = 0, eot = -1, no_ts = -1, max_initial = -1;
    float penalty = 1.0f;
    sw_logits_rules r;
    memset(&r, 0, sizeof r);
    PyObject *ts = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|O$iOOfiO:whisper_logits_rules", kwlist,
                                     &logits_obj, &step, &seq_obj, &r.sample_begin, &sup_obj,
                                     &begin_obj, &penalty, &ngram, &ts))
        return NULL;
    if (ts != Py_None && !PyArg_ParseTuple(ts, "iii", &eot, &no_ts, &max_initial))
        return NULL;
    PyArrayObject *x = swpy_float32_array(logits_obj, "logits", 2, 2), *seq = NULL, *sup = NULL,
                  *begin = NULL, *out = NULL;
    PyObject *result = NULL;
    float *scratch = NULL;
    if (!x)
        goto done;
    int rows = (int)PyArray_DIM(x, 0), n = (int)PyArray_DIM(x, 1);
    if (step < 0 || step > 1 << 16 || n < 1 || n > 1 << 24) {
        PyErr_SetString(SwOptionError, "whisper_logits_rules: bad step or logits");
        goto done;
    }
    if (step > 0) {
        seq = int32_ids(seq_obj, 2, "sequences");
        if (!seq || ids_in_range(seq, n, "sequences"))
            goto done;
        if (PyArray_DIM(seq, 0) != rows || PyArray_DIM(seq, 1) != step) {
            PyErr_Format(SwOptionError, "sequences must be [%d, %d]", rows, step);
            goto done;
        }
    }
    if (sup_obj && (!(sup = int32_ids(sup_obj, 1, "suppress")) || ids_in_range(sup, n, "suppress")))
        goto done;
    if (begin_obj && (!(begin = int32_ids(begin_obj, 1, "suppress_begin")) ||
                      ids_in_range(begin, n, "suppress_begin")))
        goto done;
    if (ts != Py_None && (eot < 0 || no_ts <= eot || no_ts + 1 >= n || max_initial < no_ts)) {
        PyErr_SetString(SwOptionError, "timestamps must be (eot, no_timestamps, max_initial id)");
        goto done;
    }
    r.n_vocab = n;
    r.repetition_penalty = penalty;
    r.no_repeat_ngram_size = ngram;
    if (sup) {
        r.suppress = PyArray_DATA(sup);
        r.n_suppress = (int)PyArray_DIM(sup, 0);
    }
    if (begin) {
        r.suppress_begin = PyArray_DATA(begin);
        r.n_suppress_begin = (int)PyArray_DIM(begin, 0);
    }
    r.timestamps = ts != Py_None;
    r.eot = eot;
    r.no_timestamps = no_ts;
    r.timestamp_begin = no_ts + 1;
    r.timestamp_end = n - 1;
    r.max_initial_timestamp = max_initial;
    out = (PyArrayObject *)PyArray_NewCopy(x, NPY_CORDER);
    scratch = PyMem_Malloc((size_t)n * sizeof *scratch);
    if (!out || !scratch) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    for (int row = 0; row < rows; row++)
        sw_logits_rules_apply(&r, step, (float *)PyArray_DATA(out) + (size_t)row * n,
                              seq ? (const int32_t *)PyArray_DATA(seq) + (size_t)row * step : NULL,
                              scratch);
    result = (PyObject *)out;
    out = NULL;
done:
    PyMem_Free(scratch);
    Py_XDECREF(out);
    Py_XDECREF(x);
    Py_XDECREF(seq);
    Py_XDECREF(sup);
    Py_XDECREF(begin);
    return result;
}

static PyMethodDef logits_functions[] = {
    {"whisper_topk", py_topk, METH_VARARGS,
     "whisper_topk(values float32 [n], k) -> int32 ids of the k largest, best first, ties in "
     "CTranslate2's CPU order (std::partial_sort in libstdc++)"},
    {"whisper_logits_rules", (PyCFunction)(void (*)(void))py_rules, METH_VARARGS | METH_KEYWORDS,
     "whisper_logits_rules(logits [rows, n], step, sequences [rows, step] or None, *, "
     "sample_begin=0, suppress=(), suppress_begin=(), repetition_penalty=1, "
     "no_repeat_ngram_size=0, timestamps=None or (eot, no_timestamps, max_initial_timestamp_id)) "
     "-> the logits after one step's rules (CTranslate2's order)"},
    {"log_softmax_rows", py_log_softmax_rows, METH_O,
     "log_softmax_rows(logits [rows, n] float32) -> float32 log-probabilities, rounded as "
     "CTranslate2's CPU kernel rounds them"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_logits(PyObject *module)
{
    return PyModule_AddFunctions(module, logits_functions);
}
