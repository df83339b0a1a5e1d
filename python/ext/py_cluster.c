/* Clustering across the edge: squared distances and weights in, scipy's
 * linkage matrix out (csrc/diar/ahc.h). */
#include "py_common.h"

#include "ahc.h"

static PyObject *py_ahc_centroid(PyObject *self, PyObject *args)
{
    PyObject *d2_obj, *w_obj;
    int overwrite = 0;
    if (!PyArg_ParseTuple(args, "OO|p:ahc_centroid", &d2_obj, &w_obj, &overwrite))
        return NULL;
    /* the algorithm overwrites the matrix as it merges: a private copy unless
     * the caller hands over a float32 matrix it no longer needs */
    int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST;
    if (overwrite && PyArray_Check(d2_obj) && PyArray_ISWRITEABLE((PyArrayObject *)d2_obj))
        flags |= NPY_ARRAY_WRITEABLE;
    else
        flags |= NPY_ARRAY_ENSURECOPY;
    PyArrayObject *d2 = (PyArrayObject *)PyArray_FROMANY(d2_obj, NPY_FLOAT32, 2, 2, flags);
    PyArrayObject *w = (PyArrayObject *)PyArray_FROMANY(
        w_obj, NPY_FLOAT64, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    PyObject *out = NULL;
    if (!d2 || !w) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(SwOptionError,
                            "ahc_centroid takes squared distances [n, n] and weights [n]");
        }
        goto done;
    }
    npy_intp n = PyArray_DIM(d2, 0);
    if (PyArray_DIM(d2, 1) != n || PyArray_DIM(w, 0) != n || n < 2) {
        PyErr_Format(SwOptionError,
                     "ahc_centroid: distances %zd x %zd and %zd weights; need "
                     "n x n and n with n >= 2",
                     (Py_ssize_t)n, (Py_ssize_t)PyArray_DIM(d2, 1), (Py_ssize_t)PyArray_DIM(w, 0));
        goto done;
    }
    npy_intp dims[2] = {n - 1, 4};
    out = PyArray_SimpleNew(2, dims, NPY_FLOAT64);
    if (!out)
        goto done;
    sw_error err = {SW_OK, ""};
    Py_BEGIN_ALLOW_THREADS
    sw_ahc_centroid(PyArray_DATA(d2), PyArray_DATA(w), (int64_t)n,
                    PyArray_DATA((PyArrayObject *)out), &err);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        Py_CLEAR(out);
        swpy_raise(&err, "ahc_centroid");
    }
done:
    Py_XDECREF(d2);
    Py_XDECREF(w);
    return out;
}

static PyMethodDef cluster_functions[] = {
    {"ahc_centroid", py_ahc_centroid, METH_VARARGS,
     "ahc_centroid(squared_distances [n, n], weights [n], overwrite=False) -> linkage [n - 1, 4] "
     "as scipy's linkage(method='centroid'); overwrite lets it use a float32 matrix as scratch"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_cluster(PyObject *module)
{
    return PyModule_AddFunctions(module, cluster_functions);
}
