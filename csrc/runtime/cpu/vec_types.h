/* GCC's vector types for the CPU kernels: eight and sixteen float lanes that
 * stay in registers, compiled for whatever level the function using them is
 * built for (cpu_dispatch.h). Memory is read and written through the "u"
 * types, which allow any float address and alias floats. Pass vectors by
 * address or through always-inline code: a vector argument's ABI differs
 * between levels. */
#ifndef SW_VEC_TYPES_H
#define SW_VEC_TYPES_H

#include <stdint.h>

typedef float sw_v8 __attribute__((vector_size(32)));
typedef float sw_v8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef uint32_t sw_v8bits __attribute__((vector_size(32)));
#define LOAD_V8(p)     (*(const sw_v8u *)(const void *)(p))
#define STORE_V8(p, v) (*(sw_v8u *)(void *)(p) = (v))

typedef float sw_v16 __attribute__((vector_size(64)));
typedef float sw_v16u __attribute__((vector_size(64), aligned(4), may_alias));
#define LOAD_V16(p) (*(const sw_v16u *)(const void *)(p))

/* sw_leaky_relu_bits(v, 0) lane by lane (elementwise_math.h): v times 1, or
 * times 0 where the sign bit is set, so -0.0 for negatives, NaN kept. */
#define RELU_V8(v) ((v) * (sw_v8)(((sw_v8bits){0} + 0x3f800000u) & ~(-((sw_v8bits)(v) >> 31))))

#endif
