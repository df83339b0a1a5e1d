/* Model code's door to the backend table's fused entries (backend.h, ABI 6
 * on): the fused passes of CAM++ and segmentation and Whisper's search step,
 * the weight preparation they and matmul_q8 read, and the `supports`
 * question before them. ops.h holds the plain ops every backend has; these
 * are the entries a backend fills with its own fused kernels (the CPU's
 * cpu/cpu_fused_entries.c, CUDA's fused.cu). A model asks sw_supports()
 * (where it cannot do without an entry: once, refusing a backend that lacks
 * it); it never asks which backend it has. */
#ifndef SW_FUSED_OPS_H
#define SW_FUSED_OPS_H

#include "backend.h"

/* 1 when be can do `cap` for sizes a, b (backend.h's sw_capability). */
int sw_supports(sw_backend *be, sw_capability cap, int64_t a, int64_t b);

/* A linear layer's weight [out, in] in the layout be's gather_linear wants;
 * *layout says how it then lies (SW_LAYOUT_OUT_IN where be keeps it). */
sw_status sw_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout, sw_error *err);

/* The int8 weight matmul_q8 reads from a host matrix [rows, cols] (f32, f16
 * or bf16): w, scale, sum allocated on be. Through be's prepare_q8 where it
 * has one, else quantized here (q8_quantize.h) and uploaded row-major. */
sw_status sw_prepare_q8(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows, int64_t cols,
                        sw_tensor *w, sw_tensor *scale, sw_tensor *sum, sw_error *err);

/* The entries of the same names (backend.h); SW_ERR_ARG where be has none,
 * so a caller that did not ask sw_supports() first hears of it. */
sw_status sw_gather_linear(const sw_tensor *x, const sw_tensor *ids, int taps, const sw_tensor *w,
                           sw_weight_layout layout, const sw_tensor *bias, int relu, int64_t block,
                           sw_tensor *y, sw_error *err);
sw_status sw_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                             int stride, sw_tensor *u, sw_error *err);
sw_status sw_conv3x3(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                     const sw_tensor *u, int stride, const sw_tensor *bias, const sw_tensor *add,
                     int relu, sw_tensor *y, sw_error *err);
sw_status sw_conv3x3_single(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                            const sw_tensor *w, const sw_tensor *bias, int relu, sw_tensor *y,
                            sw_error *err);
sw_status sw_affine_relu_rows(const sw_tensor *src, int64_t ld, int64_t n, int64_t c,
                              const sw_tensor *scale, const sw_tensor *shift, sw_tensor *dst,
                              sw_error *err);
sw_status sw_span_abs_pool(const sw_tensor *span, const int64_t *first, const float *scale,
                           const float *shift, int pool, sw_tensor *y, sw_error *err);

/* backend.h's search_step: the step's chosen tokens and scores, queued on
 * the device, the logits left there; rows_plan: the rows' sw_search_row in
 * device memory; work: the caller's, SW_SEARCH_WORK(rows, n, k) f32 entries
 * at least, whose end (SW_SEARCH_FOUND_AT) the caller downloads. SW_ERR_ARG
 * where be has none. */
sw_status sw_search_step(sw_backend *be, const sw_tensor *logits, const sw_tensor *mask,
                         const sw_tensor *rows_plan, sw_tensor *work, const sw_search_params *p,
                         sw_error *err);

/* ABI 12's entries (backend.h): Kaldi fbank frames of a span on the device,
 * and rows gathered less their item's mean. SW_ERR_ARG where be has none
 * (ask sw_supports(be, SW_CAP_FBANK, 0, 0) first). */
sw_status sw_fbank_on_device(const sw_tensor *samples, const sw_fbank_params *p,
                             const sw_tensor *banks, sw_tensor *out, sw_error *err);
sw_status sw_gather_centered(const sw_tensor *table, const sw_tensor *ids, int batch,
                             const int64_t *off, sw_tensor *out, sw_error *err);

/* ABI 16's entries (backend.h): GE2E's mel power frames of a span on the
 * device, and rows gathered times their item's gain. SW_ERR_ARG where be
 * has none (ask sw_supports(be, SW_CAP_MEL_POWER, 0, 0) first). */
sw_status sw_mel_power_on_device(const sw_tensor *samples, int n_fft, int hop,
                                 const sw_tensor *banks, sw_tensor *out, sw_error *err);
sw_status sw_gather_scaled(const sw_tensor *table, const sw_tensor *ids, const sw_tensor *scales,
                           sw_tensor *out, sw_error *err);

#endif
