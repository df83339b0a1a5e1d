/* The CPU backend's kernels for the ops of recurrent audio models (SincNet's
 * pooling and instance norm, LSTM layers, log-softmax); backend_cpu.c puts
 * them in the table. They share its worker pool, passed in as `tp`. */
#ifndef SW_CPU_SEQ_OPS_H
#define SW_CPU_SEQ_OPS_H

#include "backend.h"
#include "threads.h"

sw_status sw_cpu_leaky_relu(sw_threadpool *tp, const sw_tensor *a, float alpha, sw_tensor *out);
sw_status sw_cpu_abs(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out);
sw_status sw_cpu_max_pool1d(sw_threadpool *tp, const sw_tensor *x, int kernel, int stride,
                            sw_tensor *out);
sw_status sw_cpu_instance_norm(sw_threadpool *tp, const sw_tensor *x, const sw_tensor *gamma,
                               const sw_tensor *beta, float eps, sw_tensor *out);
sw_status sw_cpu_log_softmax(sw_threadpool *tp, const sw_tensor *a, sw_tensor *out);
/* be provides the scratch memory and the input projection's matmul. */
sw_status sw_cpu_lstm(sw_backend *be, sw_threadpool *tp, const sw_tensor *x, const sw_tensor *w_ih,
                      const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                      sw_tensor *out, sw_error *err);

#endif
