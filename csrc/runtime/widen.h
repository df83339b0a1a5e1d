/* Host arrays of float16, bfloat16 or float32 widened to float32 in one pass,
 * for model loading: the weights' bytes go straight from the (memory-mapped)
 * checkpoint into the backend's float32 buffer, with no staging copy. */
#ifndef SW_WIDEN_H
#define SW_WIDEN_H

#include <stddef.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[i] as float32 for i < n, bit for bit what sw_f16_to_f32 and
 * sw_bf16_to_f32 give (NaN payloads kept). src may have any alignment (a
 * checkpoint's tensors start at whatever byte the format puts them). dtype
 * must be SW_F16, SW_BF16 or SW_F32; anything else leaves dst untouched and
 * returns -1. */
int sw_widen_to_f32(const void *src, sw_dtype dtype, float *dst, size_t n);

/* dst[i] = src[i] (float16 at any alignment) for i < n, with the CPU's
 * F16C conversion where the dispatch level has it (x86-64-v3 and up): the
 * products that read float16 weights widen blocks of them with this on every
 * call. Every number comes out as sw_widen_to_f32 gives it; only a NaN's
 * payload may differ (F16C quiets a signalling NaN), which no product can
 * tell apart. */
void sw_widen_f16_fast(const void *src, float *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif
