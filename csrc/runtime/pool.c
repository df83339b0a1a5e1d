#include "pool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Size classes: four steps per power of two above 256 bytes, so a cached block
 * wastes at most a quarter of itself and a repeated request of the same size
 * (the common case: the same model layer, the next 30 s window) reuses it. */
#define SW_MIN_CLASS_BYTES 256u
#define SW_NUM_CLASSES     (4 * 56)

typedef struct block {
    void *ptr;
    size_t size; /* size-class bytes */
    int live;    /* 1 handed out, 0 cached, -1 tombstone */
} block;

typedef struct free_node {
    void *ptr;
    struct free_node *next;
} free_node;

struct sw_pool {
    char name[32];
    sw_raw_allocator raw;
    size_t alignment;
    pthread_mutex_t lock;
    block *table;    /* open addressing, keyed by pointer */
    size_t capacity; /* power of two */
    size_t used;     /* slots that are not empty (live, cached or tombstone) */
    free_node *bins[SW_NUM_CLASSES];
    sw_pool_stats stats;
};

static int class_of(size_t bytes)
{
    if (bytes <= SW_MIN_CLASS_BYTES)
        return 0;
    int hi = 63 - __builtin_clzll((unsigned long long)(bytes - 1));
    size_t base = (size_t)1 << hi;
    size_t quarter = base / 4;
    size_t step = (bytes - 1 - base) / quarter; /* 0..3 */
    int cls = (hi - 8) * 4 + (int)step + 1;
    return cls < SW_NUM_CLASSES ? cls : -1;
}

static size_t class_bytes(int cls)
{
    if (cls == 0)
        return SW_MIN_CLASS_BYTES;
    int hi = (cls - 1) / 4 + 8;
    size_t base = (size_t)1 << hi;
    return base + (size_t)((cls - 1) % 4 + 1) * (base / 4);
}

size_t sw_pool_block_size(size_t bytes)
{
    int cls = class_of(bytes);
    return cls < 0 ? bytes : class_bytes(cls);
}

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static block *find_slot(sw_pool *pool, const void *ptr)
{
    size_t i = hash_ptr(ptr, pool->capacity);
    for (;;) {
        block *b = &pool->table[i];
        if (b->ptr == NULL && b->live != -1)
            return NULL;
        if (b->ptr == ptr && b->live >= 0)
            return b;
        i = (i + 1) & (pool->capacity - 1);
    }
}

static int insert_slot(sw_pool *pool, void *ptr, size_t size);

static int grow_table(sw_pool *pool)
{
    size_t old_cap = pool->capacity;
    block *old = pool->table;
    size_t cap = old_cap ? old_cap * 2 : 256;
    block *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    pool->table = t;
    pool->capacity = cap;
    pool->used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].ptr && old[i].live >= 0) {
            insert_slot(pool, old[i].ptr, old[i].size);
            find_slot(pool, old[i].ptr)->live = old[i].live;
        }
    free(old);
    return 0;
}

static int insert_slot(sw_pool *pool, void *ptr, size_t size)
{
    if ((pool->used + 1) * 4 > pool->capacity * 3 && grow_table(pool) != 0)
        return -1;
    size_t i = hash_ptr(ptr, pool->capacity);
    while (pool->table[i].ptr != NULL)
        i = (i + 1) & (pool->capacity - 1);
    if (pool->table[i].live != -1)
        pool->used++;
    pool->table[i].ptr = ptr;
    pool->table[i].size = size;
    pool->table[i].live = 1;
    return 0;
}

static void remove_slot(block *b)
{
    b->ptr = NULL;
    b->size = 0;
    b->live = -1;
}

static void *host_alloc(void *ctx, size_t bytes)
{
    size_t align = ctx ? (size_t)(uintptr_t)ctx : 64;
    void *p = NULL;
    if (posix_memalign(&p, align, bytes) != 0)
        return NULL;
    return p;
}

static void host_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

sw_raw_allocator sw_host_raw_allocator(void)
{
    sw_raw_allocator r = {host_alloc, host_free, (void *)(uintptr_t)64};
    return r;
}

sw_pool *sw_pool_create(const char *name, sw_raw_allocator raw, size_t alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return NULL;
    sw_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    strncpy(pool->name, name ? name : "pool", sizeof pool->name - 1);
    pool->raw = raw;
    pool->alignment = alignment;
    if (pthread_mutex_init(&pool->lock, NULL) != 0 || grow_table(pool) != 0) {
        free(pool->table);
        free(pool);
        return NULL;
    }
    return pool;
}

static void release_cached(sw_pool *pool)
{
    for (int c = 0; c < SW_NUM_CLASSES; c++) {
        free_node *n = pool->bins[c];
        while (n) {
            free_node *next = n->next;
            block *b = find_slot(pool, n->ptr);
            if (b) {
                pool->stats.reserved -= b->size;
                remove_slot(b);
            }
            pool->raw.free(pool->raw.ctx, n->ptr);
            free(n);
            n = next;
        }
        pool->bins[c] = NULL;
    }
}

void *sw_pool_alloc(sw_pool *pool, size_t bytes)
{
    if (!pool)
        return NULL;
    if (bytes == 0)
        bytes = 1;
    int cls = class_of(bytes);
    size_t size =
        cls < 0 ? (bytes + pool->alignment - 1) & ~(pool->alignment - 1) : class_bytes(cls);
    void *ptr = NULL;

    pthread_mutex_lock(&pool->lock);
    if (cls >= 0 && pool->bins[cls]) {
        free_node *n = pool->bins[cls];
        pool->bins[cls] = n->next;
        ptr = n->ptr;
        free(n);
        find_slot(pool, ptr)->live = 1;
    } else {
        ptr = pool->raw.alloc(pool->raw.ctx, size);
        if (!ptr) {
            /* The cache may hold enough in other sizes: give it back, retry. */
            release_cached(pool);
            ptr = pool->raw.alloc(pool->raw.ctx, size);
        }
        if (ptr && insert_slot(pool, ptr, size) != 0) {
            pool->raw.free(pool->raw.ctx, ptr);
            ptr = NULL;
        }
        if (ptr) {
            pool->stats.reserved += size;
            if (pool->stats.reserved > pool->stats.peak_reserved)
                pool->stats.peak_reserved = pool->stats.reserved;
        }
    }
    if (ptr) {
        pool->stats.allocated += size;
        pool->stats.live_blocks++;
        pool->stats.total_allocs++;
        if (pool->stats.allocated > pool->stats.peak_allocated)
            pool->stats.peak_allocated = pool->stats.allocated;
    }
    pthread_mutex_unlock(&pool->lock);
    return ptr;
}

int sw_pool_free(sw_pool *pool, void *ptr)
{
    if (!pool || !ptr)
        return ptr ? -1 : 0;
    int rc = 0;
    pthread_mutex_lock(&pool->lock);
    block *b = find_slot(pool, ptr);
    if (!b || b->live != 1) {
        rc = -1;
    } else {
        pool->stats.allocated -= b->size;
        pool->stats.live_blocks--;
        int cls = class_of(b->size);
        free_node *n = cls >= 0 && class_bytes(cls) == b->size ? malloc(sizeof *n) : NULL;
        if (n) {
            b->live = 0;
            n->ptr = ptr;
            n->next = pool->bins[cls];
            pool->bins[cls] = n;
        } else {
            pool->stats.reserved -= b->size;
            remove_slot(b);
            pool->raw.free(pool->raw.ctx, ptr);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    return rc;
}

void sw_pool_trim(sw_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    release_cached(pool);
    pthread_mutex_unlock(&pool->lock);
}

sw_pool_stats sw_pool_get_stats(sw_pool *pool)
{
    sw_pool_stats s;
    pthread_mutex_lock(&pool->lock);
    s = pool->stats;
    pthread_mutex_unlock(&pool->lock);
    return s;
}

void sw_pool_destroy(sw_pool *pool)
{
    if (!pool)
        return;
    release_cached(pool);
    for (size_t i = 0; i < pool->capacity; i++)
        if (pool->table[i].ptr && pool->table[i].live == 1)
            pool->raw.free(pool->raw.ctx, pool->table[i].ptr);
    pthread_mutex_destroy(&pool->lock);
    free(pool->table);
    free(pool);
}
