/* The ops model code calls. Each checks shapes and dtypes once, here, and then
 * dispatches through the tensors' backend table, so every backend receives
 * only valid operands and the model code reads like the paper. */
#ifndef SW_OPS_H
#define SW_OPS_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

sw_status sw_matmul(const sw_tensor *a, const sw_tensor *b, sw_tensor *c, int trans_b, float alpha,
                    float beta, sw_error *err);
sw_status sw_add(const sw_tensor *a, const sw_tensor *b, sw_tensor *out, sw_error *err);
sw_status sw_mul(const sw_tensor *a, const sw_tensor *b, sw_tensor *out, sw_error *err);
sw_status sw_scale(const sw_tensor *a, float s, sw_tensor *out, sw_error *err);
sw_status sw_gelu(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_softmax(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_layernorm(const sw_tensor *a, const sw_tensor *gamma, const sw_tensor *beta, float eps,
                       sw_tensor *out, sw_error *err);
sw_status sw_convert(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_transpose(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_conv1d(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias, int stride,
                    int pad, sw_tensor *out, sw_error *err);
/* sw_conv1d with its im2col columns in `work` where the backend takes them
 * (conv1d_work, backend.h ABI 13: nothing allocated, so a graph may capture
 * it); sw_conv1d itself when work is NULL or the backend has no conv1d_work. */
sw_status sw_conv1d_work(const sw_tensor *x, const sw_tensor *w, const sw_tensor *bias, int stride,
                         int pad, const sw_tensor *work, sw_tensor *out, sw_error *err);
sw_status sw_gather_rows(const sw_tensor *table, const sw_tensor *ids, sw_tensor *out,
                         sw_error *err);
sw_status sw_scatter_rows(const sw_tensor *src, const sw_tensor *ids, sw_tensor *dst,
                          sw_error *err);
sw_status sw_attention(const sw_tensor *q, const sw_tensor *k, const sw_tensor *v,
                       const sw_attention_params *p, sw_tensor *out, sw_tensor *probs,
                       sw_error *err);
sw_status sw_leaky_relu(const sw_tensor *a, float alpha, sw_tensor *out, sw_error *err);
sw_status sw_abs(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_max_pool1d(const sw_tensor *x, int kernel, int stride, sw_tensor *out, sw_error *err);
sw_status sw_instance_norm(const sw_tensor *x, const sw_tensor *gamma, const sw_tensor *beta,
                           float eps, sw_tensor *out, sw_error *err);
sw_status sw_log_softmax(const sw_tensor *a, sw_tensor *out, sw_error *err);
/* c = a . w^T with int8 weights; see the backend's matmul_q8. beta 0 or 1. */
sw_status sw_matmul_q8(const sw_tensor *a, const sw_tensor *w, const sw_tensor *w_scale,
                       const sw_tensor *w_sum, sw_tensor *c, float beta, sw_error *err);

sw_status sw_lstm(const sw_tensor *x, const sw_tensor *w_ih, const sw_tensor *w_hh,
                  const sw_tensor *bias, sw_tensor *out, sw_error *err);
/* The same from the state in `state` [2, D, B, H] (h, then c), which then
 * holds the final state: a sequence run in pieces gives the bits of one run. */
sw_status sw_lstm_carry(const sw_tensor *x, const sw_tensor *w_ih, const sw_tensor *w_hh,
                        const sw_tensor *bias, sw_tensor *state, sw_tensor *out, sw_error *err);

/* Statistics pooling, magnitudes of re/im rows, row L2 normalisation: see
 * backend.h (ABI 5). */
sw_status sw_stats_pool(const sw_tensor *x, const sw_tensor *w, double eps, sw_tensor *out,
                        sw_error *err);
sw_status sw_magnitude(const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_l2_normalize(const sw_tensor *a, float eps, sw_tensor *out, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
