/* The CPU backend's fused entries (backend.h, ABI 6): its fused kernels and the
 * weight layouts they want, which model code reaches only through the table
 * (fused_ops.h). */
#ifndef SW_CPU_FUSED_ENTRIES_H
#define SW_CPU_FUSED_ENTRIES_H

#include "backend.h"

/* The table's supports, prepare_* and fused slots, as backend.h documents
 * each (backend_cpu.c names them in its table). */
int sw_cpu_entry_supports(sw_backend *be, sw_capability cap, int64_t a, int64_t b);
sw_status sw_cpu_entry_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout,
                                      sw_error *err);
sw_status sw_cpu_entry_prepare_q8(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows,
                                  int64_t cols, sw_tensor *w, sw_tensor *scale, sw_tensor *sum,
                                  sw_error *err);
sw_status sw_cpu_entry_gather_linear(sw_backend *be, const sw_tensor *x, const sw_tensor *ids,
                                     int taps, const sw_tensor *w, sw_weight_layout layout,
                                     const sw_tensor *bias, int relu, int64_t block, sw_tensor *y,
                                     sw_error *err);
sw_status sw_cpu_entry_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                                       int stride, sw_tensor *u, sw_error *err);
sw_status sw_cpu_entry_conv3x3(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                               const int64_t *off, const sw_tensor *u, int stride,
                               const sw_tensor *bias, const sw_tensor *add, int relu, sw_tensor *y,
                               sw_error *err);
sw_status sw_cpu_entry_conv3x3_single(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                                      const int64_t *off, const sw_tensor *w, const sw_tensor *bias,
                                      int relu, sw_tensor *y, sw_error *err);
sw_status sw_cpu_entry_affine_relu_rows(sw_backend *be, const sw_tensor *src, int64_t ld, int64_t n,
                                        int64_t c, const sw_tensor *scale, const sw_tensor *shift,
                                        sw_tensor *dst, sw_error *err);
sw_status sw_cpu_entry_span_abs_pool(sw_backend *be, const sw_tensor *span, const int64_t *first,
                                     const float *scale, const float *shift, int pool, sw_tensor *y,
                                     sw_error *err);

#endif
