#include "threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

struct sw_threadpool {
    pthread_mutex_t job_lock; /* one job at a time when several threads share the pool */
    pthread_mutex_t lock;
    pthread_cond_t work_ready;
    pthread_cond_t work_done;
    pthread_t *workers;
    int n_workers;
    int stopping;
    /* the job in flight: chunks handed out by a shared counter */
    sw_range_fn fn;
    void *ctx;
    size_t n, chunk, next;
    size_t pending; /* items of the job not finished yet */
    unsigned long generation;
};

int sw_available_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    return 1;
}

/* Claims chunks of the job in flight until none is left. The job is done
 * when every item is finished, whoever ran it: a worker that wakes after
 * the caller and the other workers have taken every chunk has nothing to
 * do, and nobody waits for it. (Waiting for every worker to check in cost a
 * scheduler time slice per job whenever the box was busier than its cores:
 * a descheduled worker held up each of the thousands of jobs of a forward.) */
static void run_chunks(sw_threadpool *tp)
{
    for (;;) {
        pthread_mutex_lock(&tp->lock);
        size_t begin = tp->next;
        if (begin >= tp->n) {
            pthread_mutex_unlock(&tp->lock);
            return;
        }
        size_t end = begin + tp->chunk < tp->n ? begin + tp->chunk : tp->n;
        tp->next = end;
        sw_range_fn fn = tp->fn;
        void *ctx = tp->ctx;
        pthread_mutex_unlock(&tp->lock);
        fn(ctx, begin, end);
        pthread_mutex_lock(&tp->lock);
        if (__atomic_sub_fetch(&tp->pending, end - begin, __ATOMIC_RELEASE) == 0)
            pthread_cond_signal(&tp->work_done);
        pthread_mutex_unlock(&tp->lock);
    }
}

/* Jobs come in bursts (a decoding step is some sixty short ones in a few
 * milliseconds), and a sleeping thread takes tens of microseconds to wake:
 * a worker that has just finished, and the caller waiting for the workers,
 * first watch for a while before they sleep. */
#define SPIN_ROUNDS 4000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg)
{
    sw_threadpool *tp = arg;
    unsigned long seen = 0;
    for (;;) {
        for (int i = 0; i < SPIN_ROUNDS; i++) {
            if (__atomic_load_n(&tp->generation, __ATOMIC_ACQUIRE) != seen ||
                __atomic_load_n(&tp->stopping, __ATOMIC_ACQUIRE))
                break;
            cpu_relax();
        }
        pthread_mutex_lock(&tp->lock);
        while (!tp->stopping && tp->generation == seen)
            pthread_cond_wait(&tp->work_ready, &tp->lock);
        if (tp->stopping)
            break;
        seen = tp->generation;
        pthread_mutex_unlock(&tp->lock);
        run_chunks(tp);
    }
    pthread_mutex_unlock(&tp->lock);
    return NULL;
}

sw_threadpool *sw_threadpool_create(int n_threads)
{
    if (n_threads <= 0)
        n_threads = sw_available_cpus();
    sw_threadpool *tp = calloc(1, sizeof *tp);
    if (!tp)
        return NULL;
    pthread_mutex_init(&tp->job_lock, NULL);
    pthread_mutex_init(&tp->lock, NULL);
    pthread_cond_init(&tp->work_ready, NULL);
    pthread_cond_init(&tp->work_done, NULL);
    /* the caller works too, so n_threads - 1 helpers */
    int helpers = n_threads - 1;
    if (helpers > 0) {
        tp->workers = calloc((size_t)helpers, sizeof *tp->workers);
        if (!tp->workers) {
            sw_threadpool_destroy(tp);
            return NULL;
        }
    }
    for (int i = 0; i < helpers; i++) {
        if (pthread_create(&tp->workers[i], NULL, worker_main, tp) != 0)
            break;
        tp->n_workers++;
    }
    return tp;
}

void sw_threadpool_destroy(sw_threadpool *tp)
{
    if (!tp)
        return;
    pthread_mutex_lock(&tp->lock);
    __atomic_store_n(&tp->stopping, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&tp->work_ready);
    pthread_mutex_unlock(&tp->lock);
    for (int i = 0; i < tp->n_workers; i++)
        pthread_join(tp->workers[i], NULL);
    pthread_cond_destroy(&tp->work_ready);
    pthread_cond_destroy(&tp->work_done);
    pthread_mutex_destroy(&tp->lock);
    pthread_mutex_destroy(&tp->job_lock);
    free(tp->workers);
    free(tp);
}

int sw_threadpool_size(const sw_threadpool *tp)
{
    return tp ? tp->n_workers + 1 : 1;
}

void sw_parallel_for(sw_threadpool *tp, size_t n, size_t min_chunk, sw_range_fn fn, void *ctx)
{
    if (n == 0)
        return;
    if (min_chunk == 0)
        min_chunk = 1;
    int threads = sw_threadpool_size(tp);
    if (!tp || tp->n_workers == 0 || n <= min_chunk) {
        fn(ctx, 0, n);
        return;
    }
    size_t chunk = (n + (size_t)threads * 4 - 1) / ((size_t)threads * 4);
    if (chunk < min_chunk)
        chunk = min_chunk;
    pthread_mutex_lock(&tp->job_lock);
    pthread_mutex_lock(&tp->lock);
    tp->fn = fn;
    tp->ctx = ctx;
    tp->n = n;
    tp->chunk = chunk;
    tp->next = 0;
    tp->pending = n;
    __atomic_store_n(&tp->generation, tp->generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&tp->work_ready);
    pthread_mutex_unlock(&tp->lock);
    run_chunks(tp);
    for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&tp->pending, __ATOMIC_ACQUIRE) > 0; i++)
        cpu_relax();
    pthread_mutex_lock(&tp->lock);
    while (tp->pending > 0)
        pthread_cond_wait(&tp->work_done, &tp->lock);
    pthread_mutex_unlock(&tp->lock);
    pthread_mutex_unlock(&tp->job_lock);
}
