/* The CPU backend's worker pool, reached from its handle: what the fused
 * kernel units of this folder share with the backend, so that they include
 * this small header and not the backend (no unit calls back into
 * backend_cpu.c). */
#ifndef SW_CPU_WORKERS_H
#define SW_CPU_WORKERS_H

#include "backend.h"
#include "pool.h"
#include "threads.h"

/* What the CPU backend keeps behind sw_backend.impl. */
typedef struct sw_cpu_impl {
    sw_pool *pool;
    sw_threadpool *threads;
} sw_cpu_impl;

/* fn over [0, n) in chunks of at least min_chunk, on a CPU backend's
 * workers (loaders that prepare host memory with many threads, e.g. int8
 * quantization); on another backend, on the calling thread. */
void sw_cpu_backend_parallel_for(sw_backend *b, size_t n, size_t min_chunk,
                                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

/* Threads of a CPU backend's pool (the caller included); 1 on another backend. */
int sw_cpu_backend_threads(sw_backend *b);

#endif
