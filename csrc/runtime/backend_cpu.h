/* The CPU backend: a counted host pool, OpenBLAS for matrix products and a
 * worker pool for everything else. */
#ifndef SW_BACKEND_CPU_H
#define SW_BACKEND_CPU_H

#include "backend.h"

/* n_threads <= 0: one per CPU this process may use. */
sw_status sw_cpu_backend_open(int n_threads, sw_backend **out, sw_error *err);

/* Which kernels OpenBLAS chose when it loaded ("Haswell", "SkylakeX", ...;
 * OPENBLAS_CORETYPE overrides it), for benches and bug reports. */
const char *sw_cpu_blas_kernels(void);

#endif
