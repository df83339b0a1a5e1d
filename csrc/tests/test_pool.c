/* The pool counts every byte, reuses cached blocks, and returns all of it. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "pool.h"

static size_t raw_live;

static void *counting_alloc(void *ctx, size_t n)
{
    void *p = malloc(n);
    if (p)
        raw_live += n;
    return p;
}

static void counting_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

int main(void)
{
    sw_raw_allocator raw = sw_host_raw_allocator();
    sw_pool *pool = sw_pool_create("test", raw, 64);
    CHECK(pool != NULL);

    void *a = sw_pool_alloc(pool, 1000);
    void *b = sw_pool_alloc(pool, 5000);
    CHECK(a && b && a != b);
    CHECK((uintptr_t)a % 64 == 0);
    sw_pool_stats s = sw_pool_get_stats(pool);
    size_t want = sw_pool_block_size(1000) + sw_pool_block_size(5000);
    CHECK(sw_pool_block_size(1000) >= 1000 && sw_pool_block_size(1000) <= 1250);
    CHECK(s.allocated == want);
    CHECK(s.reserved == want);
    CHECK(s.live_blocks == 2);

    /* freeing caches the block: allocated drops, reserved stays */
    CHECK(sw_pool_free(pool, a) == 0);
    s = sw_pool_get_stats(pool);
    CHECK(s.allocated == sw_pool_block_size(5000));
    CHECK(s.reserved == want);
    CHECK(s.peak_allocated == want);

    /* the same size class comes back from the cache */
    void *c = sw_pool_alloc(pool, 990);
    CHECK(c == a);
    CHECK(sw_pool_get_stats(pool).reserved == want);

    /* double free and foreign pointers are refused, not crashed on */
    CHECK(sw_pool_free(pool, c) == 0);
    CHECK(sw_pool_free(pool, c) == -1);
    int local;
    CHECK(sw_pool_free(pool, &local) == -1);

    sw_pool_trim(pool);
    s = sw_pool_get_stats(pool);
    CHECK(s.reserved == sw_pool_block_size(5000));

    /* many blocks: the side table grows and every pointer stays findable */
    enum { N = 5000 };
    void **ptrs = malloc(sizeof *ptrs * N);
    for (int i = 0; i < N; i++) {
        ptrs[i] = sw_pool_alloc(pool, (size_t)(i % 97) * 64 + 1);
        CHECK(ptrs[i] != NULL);
    }
    for (int i = 0; i < N; i += 2)
        CHECK(sw_pool_free(pool, ptrs[i]) == 0);
    s = sw_pool_get_stats(pool);
    CHECK(s.live_blocks == N / 2 + 1);
    for (int i = 1; i < N; i += 2)
        CHECK(sw_pool_free(pool, ptrs[i]) == 0);
    CHECK(sw_pool_free(pool, b) == 0);
    s = sw_pool_get_stats(pool);
    CHECK(s.allocated == 0);
    CHECK(s.live_blocks == 0);
    free(ptrs);

    /* huge requests beyond the size classes are exact and not cached */
    size_t huge = ((size_t)1 << 26) + 3;
    CHECK(sw_pool_block_size(huge) >= huge);
    sw_pool_trim(pool);
    CHECK(sw_pool_get_stats(pool).reserved == 0);

    /* destroy frees live blocks too (LeakSanitizer checks it in CI) */
    sw_pool_alloc(pool, 12345);
    sw_pool_alloc(pool, 77);
    sw_pool_destroy(pool);

    /* a raw allocator that counts: the pool only asks for class sizes */
    sw_raw_allocator counting = {counting_alloc, counting_free, NULL};
    pool = sw_pool_create("counting", counting, 64);
    sw_pool_alloc(pool, 300);
    CHECK(raw_live == sw_pool_block_size(300));
    sw_pool_destroy(pool);
    return sw_check_summary("test_pool");
}
