/* A caching memory pool that counts what it holds.
 *
 * Every host and device buffer of the core comes from one of these, so that
 * Pipeline.memory() can report allocated (handed out), reserved (taken from the
 * system, including cached free blocks) and peak bytes, and so that destroying
 * the pool returns every byte, even blocks a failed call never freed.
 * Pointers are tracked in a side table rather than a header in front of the
 * block, because device pointers cannot be written from the host. */
#ifndef SW_POOL_H
#define SW_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_pool_stats {
    size_t allocated; /* bytes in blocks handed out and not yet freed */
    size_t reserved;  /* bytes held from the system (allocated + cached) */
    size_t peak_allocated;
    size_t peak_reserved;
    size_t live_blocks;
    size_t total_allocs; /* sw_pool_alloc calls that succeeded */
} sw_pool_stats;

/* Where the pool gets memory from: malloc for the host, cudaMalloc for a GPU. */
typedef struct sw_raw_allocator {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} sw_raw_allocator;

typedef struct sw_pool sw_pool;

/* Returns NULL when out of memory. alignment must be a power of two. */
sw_pool *sw_pool_create(const char *name, sw_raw_allocator raw, size_t alignment);

/* NULL when the raw allocator fails even after the cache was released. */
void *sw_pool_alloc(sw_pool *pool, size_t bytes);

/* Returns 0 on success, -1 when ptr does not belong to the pool. */
int sw_pool_free(sw_pool *pool, void *ptr);

/* Gives cached free blocks back to the system. */
void sw_pool_trim(sw_pool *pool);

sw_pool_stats sw_pool_get_stats(sw_pool *pool);

/* Bytes that a request of `bytes` really takes (its size class). */
size_t sw_pool_block_size(size_t bytes);

/* Frees every block, live or cached, and the pool itself. */
void sw_pool_destroy(sw_pool *pool);

sw_raw_allocator sw_host_raw_allocator(void);

#ifdef __cplusplus
}
#endif
#endif
