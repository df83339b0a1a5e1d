/* saywho._dispatch: SAYWHO_CPU_DISPATCH read by the core's one parser
 * (sw_cpu_dispatch_parse, csrc/runtime/cpu_dispatch.c) before saywho._core
 * loads. A module of its own because loading _core loads OpenBLAS, which
 * picks its kernels from OPENBLAS_CORETYPE as it loads: Python must know the
 * level first (saywho/blas_kernels.py). It links no BLAS. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cpu_dispatch.h"

static PyObject *requested_level(PyObject *self, PyObject *args)
{
    const char *value = NULL;
    if (!PyArg_ParseTuple(args, "z:requested_level", &value))
        return NULL;
    int level = sw_cpu_dispatch_parse(value, NULL);
    if (level < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(level);
}

static PyObject *refusal(PyObject *self, PyObject *args)
{
    const char *value = NULL;
    if (!PyArg_ParseTuple(args, "z:refusal", &value))
        return NULL;
    sw_error err = {SW_OK, ""};
    if (sw_cpu_dispatch_check_value(value, &err) == SW_OK)
        Py_RETURN_NONE;
    return PyUnicode_FromString(err.msg);
}

static PyMethodDef functions[] = {
    {"requested_level", requested_level, METH_VARARGS,
     "requested_level(value): the level a SAYWHO_CPU_DISPATCH value asks for (4: x86-64-v4, "
     "3: x86-64-v3, 0: x86-64; None or '' is auto), None for a value the core refuses"},
    {"refusal", refusal, METH_VARARGS,
     "refusal(value): the core's message for a value that is no level, None for one that is"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef dispatch_module = {
    PyModuleDef_HEAD_INIT,
    "saywho._dispatch",
    "SAYWHO_CPU_DISPATCH as the core reads it, without loading the core.",
    0,
    functions,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__dispatch(void)
{
    return PyModule_Create(&dispatch_module);
}
