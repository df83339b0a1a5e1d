#include "backend_cpu.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elementwise_math.h"
#include "ops.h"
#include "threads.h"

typedef struct cpu_impl {
    sw_pool *pool;
    sw_threadpool *threads;
} cpu_impl;

static cpu_impl *impl_of(sw_backend *b)
{
    return (cpu_impl *)b->impl;
}

static void *cpu_alloc(sw_backend *b, size_t bytes, sw_error *err)
{
    void *p = sw_pool_alloc(impl_of(b)->pool, bytes);
    if (!p)
        sw_fail(err, SW_ERR_NOMEM, "host allocation of %zu bytes failed", bytes);
    return p;
}

static void cpu_free(sw_backend *b, void *ptr)
{
    sw_pool_free(impl_of(b)->pool, ptr);
}

static sw_pool_stats cpu_memory(sw_backend *b)
{
    return sw_pool_get_stats(impl_of(b)->pool);
}

static void cpu_trim(sw_backend *b)
{
    sw_pool_trim(impl_of(b)->pool);
}

static sw_status cpu_device_info(sw_backend *b, sw_device_info *info, sw_error *err)
{
    memset(info, 0, sizeof *info);
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    info->total_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    info->free_bytes = avail > 0 && page > 0 ? (size_t)avail * (size_t)page : 0;
    info->threads = sw_threadpool_size(impl_of(b)->threads);
    snprintf(info->name, sizeof info->name, "CPU (%d threads, OpenBLAS)", info->threads);
    return SW_OK;
}

static sw_status cpu_copy(sw_backend *b, void *dst, const void *src, size_t bytes, sw_error *err)
{
    memcpy(dst, src, bytes);
    return SW_OK;
}

static sw_status cpu_sync(sw_backend *b, sw_error *err)
{
    return SW_OK;
}

static sw_status cpu_matmul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                            int trans_b, float alpha, float beta, sw_error *err)
{
    int m = (int)a->shape[0], k = (int)a->shape[1];
    int n = (int)c->shape[1];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                a->data, k, b->data, (int)b->shape[1], beta, c->data, n);
    return SW_OK;
}

/* Elementwise loops run in chunks on the worker pool. */
typedef struct ew_job {
    const float *a, *b;
    float *out;
    size_t b_len; /* length of b, which repeats along a (row broadcast) */
    float s;
    int op;
} ew_job;

enum { EW_ADD, EW_MUL, EW_SCALE, EW_GELU };

static void ew_range(void *ctx, size_t begin, size_t end)
{
    const ew_job *j = ctx;
    switch (j->op) {
    case EW_ADD:
        for (size_t i = begin; i < end; i++)
            j->out[i] = j->a[i] + j->b[i % j->b_len];
        break;
    case EW_MUL:
        for (size_t i = begin; i < end; i++)
            j->out[i] = j->a[i] * j->b[i % j->b_len];
        break;
    case EW_SCALE:
        for (size_t i = begin; i < end; i++)
            j->out[i] = j->a[i] * j->s;
        break;
    case EW_GELU:
        for (size_t i = begin; i < end; i++)
            j->out[i] = sw_gelu_f(j->a[i]);
        break;
    }
}

static sw_status run_ew(sw_backend *be, int op, const sw_tensor *a, const sw_tensor *b, float s,
                        sw_tensor *out)
{
    ew_job j = {a->data, b ? b->data : NULL, out->data, b ? (size_t)sw_tensor_numel(b) : 1, s, op};
    sw_parallel_for(impl_of(be)->threads, (size_t)sw_tensor_numel(a), 16384, ew_range, &j);
    return SW_OK;
}

static sw_status cpu_add(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                         sw_error *err)
{
    return run_ew(be, EW_ADD, a, b, 0.0f, out);
}

static sw_status cpu_mul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                         sw_error *err)
{
    return run_ew(be, EW_MUL, a, b, 0.0f, out);
}

static sw_status cpu_scale(sw_backend *be, const sw_tensor *a, float s, sw_tensor *out,
                           sw_error *err)
{
    return run_ew(be, EW_SCALE, a, NULL, s, out);
}

static sw_status cpu_gelu(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    return run_ew(be, EW_GELU, a, NULL, 0.0f, out);
}

/* Row-wise ops: softmax and layer norm, one row per item. */
typedef struct row_job {
    const float *a, *gamma, *beta;
    float *out;
    size_t len;
    float eps;
} row_job;

static void softmax_rows(void *ctx, size_t begin, size_t end)
{
    const row_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *x = j->a + r * j->len;
        float *y = j->out + r * j->len;
        float mx = -INFINITY;
        for (size_t i = 0; i < j->len; i++)
            mx = x[i] > mx ? x[i] : mx;
        double sum = 0.0;
        for (size_t i = 0; i < j->len; i++) {
            /* a row of -inf (fully masked) gives zeros, not NaN */
            y[i] = mx == -INFINITY ? 0.0f : expf(x[i] - mx);
            sum += y[i];
        }
        float inv = sum > 0.0 ? (float)(1.0 / sum) : 0.0f;
        for (size_t i = 0; i < j->len; i++)
            y[i] *= inv;
    }
}

static void layernorm_rows(void *ctx, size_t begin, size_t end)
{
    const row_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *x = j->a + r * j->len;
        float *y = j->out + r * j->len;
        double mean = 0.0, var = 0.0;
        for (size_t i = 0; i < j->len; i++)
            mean += x[i];
        mean /= (double)j->len;
        for (size_t i = 0; i < j->len; i++)
            var += ((double)x[i] - mean) * ((double)x[i] - mean);
        var /= (double)j->len;
        float inv = (float)(1.0 / sqrt(var + (double)j->eps));
        for (size_t i = 0; i < j->len; i++)
            y[i] = ((float)(x[i] - mean)) * inv * j->gamma[i] + j->beta[i];
    }
}

static sw_status cpu_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    row_job j = {a->data, NULL, NULL, out->data, (size_t)sw_row_len(a), 0.0f};
    sw_parallel_for(impl_of(be)->threads, (size_t)sw_rows(a), 8, softmax_rows, &j);
    return SW_OK;
}

static sw_status cpu_layernorm(sw_backend *be, const sw_tensor *a, const sw_tensor *gamma,
                               const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err)
{
    row_job j = {a->data, gamma->data, beta->data, out->data, (size_t)sw_row_len(a), eps};
    sw_parallel_for(impl_of(be)->threads, (size_t)sw_rows(a), 8, layernorm_rows, &j);
    return SW_OK;
}

static float load_as_f32(const void *p, sw_dtype t, size_t i)
{
    if (t == SW_F16)
        return sw_f16_to_f32(((const uint16_t *)p)[i]);
    if (t == SW_BF16)
        return sw_bf16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void store_f32(void *p, sw_dtype t, size_t i, float v)
{
    if (t == SW_F16)
        ((uint16_t *)p)[i] = sw_f32_to_f16(v);
    else if (t == SW_BF16)
        ((uint16_t *)p)[i] = sw_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}

static sw_status cpu_convert(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    size_t n = (size_t)sw_tensor_numel(a);
    for (size_t i = 0; i < n; i++)
        store_f32(out->data, out->dtype, i, load_as_f32(a->data, a->dtype, i));
    return SW_OK;
}

static void cpu_destroy(sw_backend *b)
{
    if (!b)
        return;
    cpu_impl *impl = impl_of(b);
    if (impl) {
        sw_threadpool_destroy(impl->threads);
        sw_pool_destroy(impl->pool);
        free(impl);
    }
    free(b);
}

sw_status sw_cpu_backend_open(int n_threads, sw_backend **out, sw_error *err)
{
    *out = NULL;
    if (n_threads > 1024)
        return sw_fail(err, SW_ERR_ARG, "threads must be at most 1024, got %d", n_threads);
    sw_backend *b = calloc(1, sizeof *b);
    cpu_impl *impl = calloc(1, sizeof *impl);
    if (!b || !impl) {
        free(b);
        free(impl);
        return sw_fail(err, SW_ERR_NOMEM, "cannot allocate the CPU backend");
    }
    b->impl = impl;
    impl->pool = sw_pool_create("cpu", sw_host_raw_allocator(), 64);
    impl->threads = sw_threadpool_create(n_threads);
    if (!impl->pool || !impl->threads) {
        cpu_destroy(b);
        return sw_fail(err, SW_ERR_NOMEM, "cannot create the CPU pools");
    }
    /* BLAS gets the same thread count as our own loops; they never overlap. */
    openblas_set_num_threads(sw_threadpool_size(impl->threads));
    b->abi = SW_BACKEND_ABI;
    b->kind = SW_DEVICE_CPU;
    b->name = "cpu";
    b->alloc = cpu_alloc;
    b->free = cpu_free;
    b->memory = cpu_memory;
    b->trim = cpu_trim;
    b->device_info = cpu_device_info;
    b->upload = cpu_copy;
    b->download = cpu_copy;
    b->synchronize = cpu_sync;
    b->matmul = cpu_matmul;
    b->add = cpu_add;
    b->mul = cpu_mul;
    b->scale = cpu_scale;
    b->gelu = cpu_gelu;
    b->softmax = cpu_softmax;
    b->layernorm = cpu_layernorm;
    b->convert = cpu_convert;
    b->destroy = cpu_destroy;
    *out = b;
    return SW_OK;
}
