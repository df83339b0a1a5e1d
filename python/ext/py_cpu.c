/* Which CPU kernels run here (csrc/runtime/cpu_dispatch.h): for benches,
 * bug reports and the tests that force a lower level. */
#include "py_common.h"

#include "cpu_backend.h"
#include "cpu_dispatch.h"

static PyObject *py_cpu_dispatch(PyObject *self, PyObject *unused)
{
    sw_error err = {SW_OK, ""};
    if (sw_cpu_dispatch_check(&err) != SW_OK)
        return swpy_raise(&err, NULL);
    return Py_BuildValue("{s:s,s:s,s:O,s:s,s:s}", "level", sw_cpu_level_name(sw_cpu_level_get()),
                         "hardware", sw_cpu_level_name(sw_cpu_level_hardware()), "vnni",
                         sw_cpu_has_vnni() ? Py_True : Py_False, "blas", sw_cpu_blas_kernels(),
                         "amx", sw_amx_describe());
}

static PyMethodDef cpu_functions[] = {
    {"cpu_dispatch", py_cpu_dispatch, METH_NOARGS,
     "cpu_dispatch() -> {level, hardware, vnni, blas, amx}: the instruction-set level saywho's "
     "CPU kernels run at (SAYWHO_CPU_DISPATCH may lower it), the CPU's own level, whether the "
     "int8 kernel uses AVX-512 VNNI, the kernels OpenBLAS chose (OPENBLAS_CORETYPE sets them), "
     "and which AMX tiles run (or why none)"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_cpu(PyObject *module)
{
    return PyModule_AddFunctions(module, cpu_functions);
}
