/* saywho._core.Runtime's layout, shared with the model types that run on it
 * (they borrow its backend and take its lock around every call). */
#ifndef SWPY_RUNTIME_H
#define SWPY_RUNTIME_H

#include "py_common.h"

#include <pythread.h>

#include "backend.h"

typedef struct {
    PyObject_HEAD sw_backend *backend; /* NULL once closed */
    PyThread_type_lock lock;           /* ops run without the GIL; close() waits for them */
    char fallback[512];
    int threads; /* as asked (0: one per CPU); the CPU-side stages (features) use it too */
} RuntimeObject;

#endif
