/* Whisper's compute types as the core lists and checks them
 * (csrc/whisper/whisper_compute.h): saywho._core.compute_types(),
 * resolve_compute_type(name) and check_compute_type(runtime, name). Python's
 * saywho.whisper.compute_types asks these and holds no list of its own. */
#include "py_model.h"

#include "whisper_compute.h"

static PyObject *compute_types(PyObject *self, PyObject *unused)
{
    PyObject *core = PyTuple_New(sw_whisper_compute_count());
    PyObject *names = PyDict_New();
    PyObject *not_built = PyList_New(0);
    for (int i = 0; core && i < sw_whisper_compute_count(); i++) {
        PyObject *s = PyUnicode_FromString(sw_whisper_compute_name(i));
        if (!s || PyTuple_SetItem(core, i, s) != 0)
            Py_CLEAR(core);
    }
    int compute;
    const char *name;
    for (int i = 0; core && names && not_built && (name = sw_whisper_compute_spelling(i, &compute));
         i++) {
        int rc;
        if (compute >= 0) {
            rc = PyDict_SetItemString(names, name, PyTuple_GetItem(core, compute)); /* borrowed */
        } else {
            PyObject *s = PyUnicode_FromString(name);
            rc = s ? PyList_Append(not_built, s) : -1;
            Py_XDECREF(s);
        }
        if (rc != 0)
            Py_CLEAR(names);
    }
    PyObject *out = core && names && not_built
                        ? Py_BuildValue("{sOsOsN}", "core", core, "names", names, "not_built",
                                        PyList_AsTuple(not_built))
                        : NULL;
    Py_XDECREF(core);
    Py_XDECREF(names);
    Py_XDECREF(not_built);
    return out;
}

static PyObject *resolve(PyObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:resolve_compute_type", &name))
        return NULL;
    sw_whisper_compute c;
    sw_error err = {SW_OK, ""};
    if (sw_whisper_compute_parse(name, &c, &err) != SW_OK)
        return swpy_raise(&err, NULL);
    return PyUnicode_FromString(sw_whisper_compute_name((int)c));
}

static PyObject *check(PyObject *self, PyObject *args)
{
    PyObject *runtime;
    const char *name;
    if (!PyArg_ParseTuple(args, "Os:check_compute_type", &runtime, &name))
        return NULL;
    sw_whisper_compute c;
    sw_error err = {SW_OK, ""};
    if (sw_whisper_compute_parse(name, &c, &err) != SW_OK)
        return swpy_raise(&err, NULL);
    RuntimeObject *rt = swpy_open_runtime(runtime);
    if (!rt)
        return NULL;
    swpy_runtime_lock(rt);
    if (!rt->backend)
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime was closed");
    else
        sw_whisper_compute_check((int)c, sw_whisper_compute_offered(rt->backend), rt->backend->name,
                                 &err);
    PyThread_release_lock(rt->lock);
    if (err.code != SW_OK)
        return swpy_raise(&err, NULL);
    Py_RETURN_NONE;
}

static PyMethodDef compute_type_functions[] = {
    {"compute_types", compute_types, METH_NOARGS,
     "Whisper's compute types: {'core': the computes in the core's order, 'names': every name "
     "a user may write -> its compute, 'not_built': faster-whisper's names saywho does not "
     "build}"},
    {"resolve_compute_type", resolve, METH_VARARGS,
     "A compute_type name -> the compute it means; OptionError when unknown or not built"},
    {"check_compute_type", check, METH_VARARGS,
     "check_compute_type(runtime, name): OptionError, with the one message, when the Runtime's "
     "backend does not compute it"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_compute_types(PyObject *module)
{
    return PyModule_AddFunctions(module, compute_type_functions);
}
