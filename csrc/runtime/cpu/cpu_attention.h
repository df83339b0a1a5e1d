/* The CPU backend's attention: softmax(q k^T * scale) v per head, with a
 * causal offset or a key-length mask, the decoder's few query rows fused in
 * one loop and longer queries (the encoder, a prompt) through sgemm.
 * backend_cpu.c puts it in the table and gives it its worker pool and its
 * scratch memory. */
#ifndef SW_CPU_ATTENTION_H
#define SW_CPU_ATTENTION_H

#include "backend.h"
#include "threads.h"

/* Floats of scratch sw_cpu_attention needs for the scores when they are not
 * kept (probs NULL). */
size_t sw_cpu_attention_scratch(sw_threadpool *tp, const sw_tensor *q,
                                const sw_attention_params *p);

/* out = attention(q, k, v); scores receives the probabilities
 * [B, H, T_q, kv_len] when keep is set, else it is scratch of
 * sw_cpu_attention_scratch floats. */
void sw_cpu_attention(sw_threadpool *tp, const sw_tensor *q, const sw_tensor *k, const sw_tensor *v,
                      const sw_attention_params *p, sw_tensor *out, float *scores, int keep);

#endif
