/* The worker pool runs every item of every job exactly once and returns only
 * when all are done, whether the workers are quick, slow to wake, or more
 * than the CPUs: thousands of short jobs in a row (a forward's pattern),
 * with some items sleeping so that a worker is still inside a chunk when
 * the caller has run out of chunks. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "threads.h"

typedef struct job {
    int *hits;
    int slow_every; /* items i with i % slow_every == 0 sleep a little; 0: none */
} job;

static void count(void *ctx, size_t begin, size_t end)
{
    const job *j = ctx;
    for (size_t i = begin; i < end; i++) {
        if (j->slow_every && i % (size_t)j->slow_every == 0) {
            struct timespec ts = {0, 20000}; /* 20 us */
            nanosleep(&ts, NULL);
        }
        __atomic_add_fetch(&j->hits[i], 1, __ATOMIC_RELAXED);
    }
}

static void run_jobs(int threads, int jobs, int slow_every)
{
    sw_threadpool *tp = sw_threadpool_create(threads);
    CHECK(tp != NULL);
    CHECK(sw_threadpool_size(tp) == threads);
    for (int k = 0; k < jobs; k++) {
        size_t n = 1 + (size_t)(k * 37 % 400);
        int *hits = calloc(n, sizeof *hits);
        if (!hits) {
            CHECK(hits != NULL);
            break;
        }
        job j = {hits, slow_every};
        sw_parallel_for(tp, n, 1 + (size_t)(k % 5), count, &j);
        /* all done on return: nothing may still be running on this job */
        for (size_t i = 0; i < n; i++)
            CHECK(hits[i] == 1);
        free(hits);
    }
    sw_threadpool_destroy(tp);
}

int main(void)
{
    run_jobs(2, 5000, 0);
    run_jobs(2, 300, 7);
    run_jobs(8, 2000, 0); /* more threads than this box's cores */
    run_jobs(8, 200, 3);
    run_jobs(1, 100, 0);
    return sw_check_summary("test_threads");
}
