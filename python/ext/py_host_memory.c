/* _core.host_memory(root=None): the C core's host memory figures
 * (csrc/runtime/host_memory.h), the one reader behind the CPU backend's
 * free/total, the checkpoints and saywho._internal.memory.system_memory(). */
#include "py_common.h"

#include "host_memory.h"

static PyObject *py_host_memory(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"root", NULL};
    PyObject *root_obj = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:host_memory", keywords, &root_obj))
        return NULL;
    PyObject *root_bytes = NULL;
    if (root_obj != Py_None && !PyUnicode_FSConverter(root_obj, &root_bytes))
        return NULL;
    sw_host_memory m;
    const char *root = root_bytes ? PyBytes_AsString(root_bytes) : NULL;
    Py_BEGIN_ALLOW_THREADS
    sw_host_memory_read(root, &m);
    Py_END_ALLOW_THREADS
    Py_XDECREF(root_bytes);
    return Py_BuildValue(
        "{s:K,s:K,s:s,s:K,s:K,s:K,s:K,s:i}", "total", (unsigned long long)m.total_bytes,
        "available", (unsigned long long)m.available_bytes, "source",
        sw_memory_source_name(m.source), "host_total", (unsigned long long)m.host_total_bytes,
        "host_available", (unsigned long long)m.host_available_bytes, "cgroup_limit",
        (unsigned long long)m.cgroup_limit_bytes, "cgroup_used",
        (unsigned long long)m.cgroup_used_bytes, "cgroup_version", m.cgroup_version);
}

static PyMethodDef host_memory_functions[] = {
    {"host_memory", (PyCFunction)(void (*)(void))py_host_memory, METH_VARARGS | METH_KEYWORDS,
     "host_memory(root=None) -> {total, available, source, host_total, host_available, "
     "cgroup_limit, cgroup_used, cgroup_version}: bytes this process can still have, from "
     "/proc/meminfo's MemAvailable or its cgroup's limit, whichever is tighter (source: 'host' "
     "or 'cgroup'). root prefixes every path read, for tests."},
    {NULL, NULL, 0, NULL},
};

int swpy_init_host_memory(PyObject *module)
{
    return PyModule_AddFunctions(module, host_memory_functions);
}
