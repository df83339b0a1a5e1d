/* saywho._core: the one CPython extension. This file only lists its parts:
 * each registers its functions and types through its swpy_init_*; the
 * exception classes and the helpers every part shares are py_helpers.c's. */
#define SWPY_MODULE_MAIN
#include "py_common.h"

static int exec_module(PyObject *m)
{
    if (swpy_init_errors(m) != 0)
        return -1;
    if (PyModule_AddStringConstant(m, "__version__", SAYWHO_VERSION) != 0)
        return -1;
    if (swpy_init_audio(m) != 0 || swpy_init_features(m) != 0 || swpy_init_runtime(m) != 0 ||
        swpy_init_whisper(m) != 0 || swpy_init_whisper_generate(m) != 0 || swpy_init_diar(m) != 0 ||
        swpy_init_vad(m) != 0 || swpy_init_align(m) != 0 || swpy_init_cluster(m) != 0 ||
        swpy_init_logits(m) != 0 || swpy_init_dtw(m) != 0 || swpy_init_cpu(m) != 0 ||
        swpy_init_host_memory(m) != 0 || swpy_init_compute_types(m) != 0)
        return -1;
    return 0;
}

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "saywho._core",
    "saywho's C core: audio decoding, features, runtime and backends.",
    0,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    if (exec_module(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
