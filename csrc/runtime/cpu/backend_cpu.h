/* The CPU backend: a counted host pool, OpenBLAS for matrix products and a
 * worker pool for everything else. */
#ifndef SW_BACKEND_CPU_H
#define SW_BACKEND_CPU_H

#include "backend.h"

/* n_threads <= 0: one per CPU this process may use. */
sw_status sw_cpu_backend_open(int n_threads, sw_backend **out, sw_error *err);

/* fn over [0, n) in chunks of at least min_chunk, on a CPU backend's
 * workers (loaders that prepare host memory with many threads, e.g. int8
 * quantization); on another backend, on the calling thread. */
void sw_cpu_backend_parallel_for(sw_backend *b, size_t n, size_t min_chunk,
                                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

/* Threads of a CPU backend's pool (the caller included); 1 on another backend. */
int sw_cpu_backend_threads(sw_backend *b);

/* Which kernels OpenBLAS chose when it loaded ("Haswell", "SkylakeX", ...;
 * OPENBLAS_CORETYPE overrides it), for benches and bug reports. */
const char *sw_cpu_blas_kernels(void);

#endif
