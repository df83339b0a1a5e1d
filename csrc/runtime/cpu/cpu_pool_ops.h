/* The CPU backend's kernels for the last steps of the speaker embeddings and
 * the VAD's front end (backend.h, ABI 5): statistics pooling, magnitudes of
 * complex rows, row L2 normalisation. backend_cpu.c puts them in the table. */
#ifndef SW_CPU_POOL_OPS_H
#define SW_CPU_POOL_OPS_H

#include "backend.h"
#include "threads.h"

void sw_cpu_stats_pool(sw_threadpool *tp, const sw_tensor *x, const sw_tensor *w, double eps,
                       sw_tensor *out);
void sw_cpu_magnitude(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out);
void sw_cpu_l2_normalize(sw_threadpool *tp, const sw_tensor *a, float eps, sw_tensor *out);

#endif
