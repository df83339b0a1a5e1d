/* The CPU backend as code outside csrc/runtime/cpu/ sees it: how to open it
 * and what it reports about itself. Nothing outside cpu/ includes a cpu/
 * header (tests/test_c_structure.py holds that line); this is the door. */
#ifndef SW_CPU_BACKEND_H
#define SW_CPU_BACKEND_H

#include "backend.h"

/* n_threads <= 0: one per CPU this process may use. */
sw_status sw_cpu_backend_open(int n_threads, sw_backend **out, sw_error *err);

/* Which kernels OpenBLAS chose when it loaded ("Haswell", "SkylakeX", ...;
 * OPENBLAS_CORETYPE overrides it), for benches and bug reports. */
const char *sw_cpu_blas_kernels(void);

/* One line for cpu_dispatch() and the benches: which AMX tiles run, or why
 * none (cpu/amx.c). */
const char *sw_amx_describe(void);

#endif
