/* The largest value of a row, the first step of the CPU's softmax and
 * log-softmax rows: one scan in index order, so both see the same max. */
#ifndef SW_CPU_ROW_MAX_H
#define SW_CPU_ROW_MAX_H

#include <math.h>
#include <stddef.h>

/* -INFINITY for an empty or fully masked row; callers test for it. */
static inline float sw_cpu_row_max(const float *x, size_t len)
{
    float mx = -INFINITY;
    for (size_t i = 0; i < len; i++)
        mx = x[i] > mx ? x[i] : mx;
    return mx;
}

#endif
