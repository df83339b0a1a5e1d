#include "cpu_workers.h"

void sw_cpu_backend_parallel_for(sw_backend *b, size_t n, size_t min_chunk,
                                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx)
{
    if (b->kind == SW_DEVICE_CPU)
        sw_parallel_for(((sw_cpu_impl *)b->impl)->threads, n, min_chunk, fn, ctx);
    else if (n > 0)
        fn(ctx, 0, n);
}

int sw_cpu_backend_threads(sw_backend *b)
{
    return b->kind == SW_DEVICE_CPU ? sw_threadpool_size(((sw_cpu_impl *)b->impl)->threads) : 1;
}
