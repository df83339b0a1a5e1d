/* A persistent worker pool for the CPU backend's own loops (elementwise ops,
 * spectrogram frames). BLAS brings its own threads; both are sized to the
 * CPUs this process may run on, not to the machine's total. */
#ifndef SW_THREADS_H
#define SW_THREADS_H

#include <stddef.h>

typedef struct sw_threadpool sw_threadpool;

/* fn(ctx, begin, end) handles items [begin, end). */
typedef void (*sw_range_fn)(void *ctx, size_t begin, size_t end);

/* n_threads <= 0 means one per available CPU. NULL on failure. */
sw_threadpool *sw_threadpool_create(int n_threads);
void sw_threadpool_destroy(sw_threadpool *tp);
int sw_threadpool_size(const sw_threadpool *tp);

/* Splits [0, n) into chunks of at least min_chunk items and runs them on the
 * pool and the calling thread; returns when all are done. tp may be NULL. */
void sw_parallel_for(sw_threadpool *tp, size_t n, size_t min_chunk, sw_range_fn fn, void *ctx);

/* CPUs this process may use (sched_getaffinity), at least 1. */
int sw_available_cpus(void);

#endif
