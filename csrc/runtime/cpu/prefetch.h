/* Asking memory for the bytes a kernel reads next. The decoder's products
 * read tens of MB of weights a step with little arithmetic between rows; the
 * hardware prefetcher alone kept a Zen 5 at 46 of its 60-70 GB/s. */
#ifndef SW_PREFETCH_H
#define SW_PREFETCH_H

/* How far ahead of what it multiplies a kernel asks for its weight: 24 KB
 * for one input row, less for more rows, which spend longer on each weight
 * row (measured against 8, 16 and 32 rows of tiny.en ahead at one and five
 * rows, float16 and int8). */
static inline long sw_prefetch_ahead_bytes(int input_rows)
{
    return 24576 / (input_rows > 0 ? input_rows : 1);
}

/* The same distance in whole float16 weight rows of k halves, at least two
 * (the float16 few-rows paths: small_gemm.c, f16_rows_grouped.c). */
static inline int sw_prefetch_ahead_f16_rows(int input_rows, int k)
{
    long rows = sw_prefetch_ahead_bytes(input_rows) / (2L * k);
    return rows < 2 ? 2 : (int)rows;
}

/* Prefetch [p, p + bytes), stopping at end when end is not NULL. A prefetch
 * never faults, but past the data it only wastes bandwidth. */
static inline void sw_prefetch_span(const void *p, long bytes, const void *end)
{
    const char *c = p, *stop = end;
    for (long i = 0; i < bytes && (!stop || c + i < stop); i += 64)
        __builtin_prefetch(c + i, 0, 3);
}

#endif
