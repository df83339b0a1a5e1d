#include "cpu_backend.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_attention.h"
#include "cpu_pool_ops.h"
#include "cpu_row_max.h"
#include "cpu_seq_ops.h"
#include "elementwise_math.h"
#include "bf16_gemm.h"
#include "host_memory.h"
#include "cpu_fused_entries.h"
#include "q8_gemm.h"
#include "q8_packed.h"
#include "cpu_dispatch.h"
#include "small_gemm.h"
#include "widen.h"
#include "threads.h"
#include "cpu_workers.h"

typedef sw_cpu_impl cpu_impl; /* cpu_workers.h: the fused units reach the workers too */

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
    /* what this process can still have: MemAvailable, or its cgroup's
     * headroom where that is tighter (host_memory.h) */
    sw_host_memory mem;
    sw_host_memory_read(NULL, &mem);
    info->total_bytes = (size_t)mem.total_bytes;
    info->free_bytes = (size_t)mem.available_bytes;
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

/* OpenBLAS runs single-threaded and the worker pool splits each product in
 * parts: rows of c when there are many (the encoder's frames), else columns
 * (decoding: a few rows against a wide weight). One pool of threads means no
 * BLAS threads spinning while our own loops run, and sgemm may be called
 * from inside a parallel loop (attention heads). */
/* Part p of `parts` column blocks of n outputs: [*c0, *c1), starting on
 * multiples of 16 floats; the last part ends at n. */
static void column_part(int n, int p, int parts, int *c0, int *c1)
{
    *c0 = (int)((int64_t)n * p / parts) & ~15;
    *c1 = p + 1 == parts ? n : (int)((int64_t)n * (p + 1) / parts) & ~15;
}

typedef struct gemm_job {
    int trans_b, m, n, k, lda, ldb, ldc, parts, by_rows;
    float alpha, beta;
    const float *a, *b;
    float *c;
} gemm_job;

/* Fewer rows than this go through sgemv, one row at a time. */
#define SW_GEMV_MAX_ROWS 4

static void gemm_parts(void *ctx, size_t begin, size_t end)
{
    const gemm_job *j = ctx;
    for (size_t p = begin; p < end; p++) {
        if (j->by_rows) {
            int r0 = (int)((int64_t)j->m * (int64_t)p / j->parts);
            int r1 = (int)((int64_t)j->m * (int64_t)(p + 1) / j->parts);
            if (r1 > r0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, j->trans_b ? CblasTrans : CblasNoTrans,
                            r1 - r0, j->n, j->k, j->alpha, j->a + (size_t)r0 * (size_t)j->lda,
                            j->lda, j->b, j->ldb, j->beta, j->c + (size_t)r0 * (size_t)j->ldc,
                            j->ldc);
        } else {
            int c0, c1;
            column_part(j->n, (int)p, j->parts, &c0, &c1);
            const float *b = j->trans_b ? j->b + (size_t)c0 * (size_t)j->ldb : j->b + c0;
            if (c1 > c0 && j->trans_b && j->m < SW_SMALL_GEMM_MAX_ROWS) {
                /* a few rows (decoding, beams) against a [n, k] weight */
                sw_small_gemm_nt(j->m, c0, c1, j->k, j->alpha, j->a, j->lda, j->b, j->ldb, j->beta,
                                 j->c, j->ldc);
            } else if (c1 > c0 && j->m < SW_GEMV_MAX_ROWS) {
                /* a row or two (greedy decoding): sgemv reads the weight once and
                 * skips sgemm's packing copy of it, which dominates here */
                for (int r = 0; r < j->m; r++)
                    cblas_sgemv(CblasRowMajor, j->trans_b ? CblasNoTrans : CblasTrans,
                                j->trans_b ? c1 - c0 : j->k, j->trans_b ? j->k : c1 - c0, j->alpha,
                                b, j->ldb, j->a + (size_t)r * (size_t)j->lda, 1, j->beta,
                                j->c + (size_t)r * (size_t)j->ldc + c0, 1);
            } else if (c1 > c0)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, j->trans_b ? CblasTrans : CblasNoTrans,
                            j->m, c1 - c0, j->k, j->alpha, j->a, j->lda, b, j->ldb, j->beta,
                            j->c + c0, j->ldc);
        }
    }
}

static void par_sgemm(sw_backend *be, int trans_b, int m, int n, int k, float alpha, const float *a,
                      int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    int threads = sw_threadpool_size(impl_of(be)->threads);
    gemm_job j = {trans_b, m, n, k, lda, ldb, ldc, 1, 1, alpha, beta, a, b, c};
    double flops = 2.0 * m * n * k;
    /* a few rows against a [n, k] weight always take the column path (the
     * few-rows kernel, or sgemv), whose cost is reading the weight once:
     * worth splitting from a smaller size than sgemm's packing */
    int few_rows = m < SW_GEMV_MAX_ROWS || (trans_b && m < SW_SMALL_GEMM_MAX_ROWS);
    double split_flops = few_rows ? 4e5 : 2e6;
    if (!few_rows && threads > 1 && flops > 2e6 && m >= 16 * threads) {
        j.parts = threads;
    } else if (few_rows || (threads > 1 && flops > 2e6 && n >= 64 * threads)) {
        j.parts = threads > 1 && flops > split_flops && n >= 64 * threads ? threads : 1;
        j.by_rows = 0;
    }
    sw_parallel_for(impl_of(be)->threads, (size_t)j.parts, 1, gemm_parts, &j);
}

/* Float16 weights [n, k] (ops.c admits them with trans_b only): a Whisper
 * model's matrices as its file holds them, mapped, not copied (half the
 * memory, and a load that writes nothing). Every output gets the bits it
 * gets from the same weights widened to float32 beforehand: a few rows go
 * through the few-rows kernel on blocks widened in cache; more rows get
 * the whole weight widened into scratch for sgemm, whose packing copies it
 * anyway. One row is the exception: float32 weights take sgemv there,
 * halves the few-rows kernel (the same sums in another order). */
typedef struct half_job {
    int m, n, k, parts, rows;
    float alpha, beta;
    const float *a;
    const unsigned char *w;
    float *c, *scratch;
} half_job;

static void half_parts(void *ctx, size_t begin, size_t end)
{
    const half_job *j = ctx;
    for (size_t p = begin; p < end; p++) {
        int c0, c1;
        column_part(j->n, (int)p, j->parts, &c0, &c1);
        if (c1 > c0)
            sw_small_gemm_nt_f16(j->m, c0, c1, j->k, j->alpha, j->a, j->k, j->w, j->k, j->beta,
                                 j->c, j->n, j->scratch + p * (size_t)j->rows * (size_t)j->k,
                                 j->rows);
    }
}

static void widen_rows(void *ctx, size_t begin, size_t end)
{
    const half_job *j = ctx;
    sw_widen_f16_fast(j->w + begin * (size_t)j->k * 2, j->scratch + begin * (size_t)j->k,
                      (end - begin) * (size_t)j->k);
}

static sw_status matmul_half(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                             float alpha, float beta, sw_error *err)
{
    int m = (int)a->shape[0], k = (int)a->shape[1], n = (int)c->shape[1];
    int threads = sw_threadpool_size(impl_of(be)->threads);
    half_job j = {m, n, k, 1, 0, alpha, beta, a->data, b->data, c->data, NULL};
    if (m < SW_SMALL_GEMM_MAX_ROWS) {
        double flops = 2.0 * m * n * k;
        j.parts = threads > 1 && flops > 4e5 && n >= 64 * threads ? threads : 1;
        j.rows = sw_small_gemm_f16_rows(k);
        j.scratch =
            be->alloc(be, (size_t)j.parts * (size_t)j.rows * (size_t)k * sizeof(float), err);
        if (!j.scratch)
            return err->code;
        sw_parallel_for(impl_of(be)->threads, (size_t)j.parts, 1, half_parts, &j);
    } else {
        j.scratch = be->alloc(be, (size_t)n * (size_t)k * sizeof(float), err);
        if (!j.scratch)
            return err->code;
        size_t min_rows = k < 16384 ? (size_t)(16384 / k) : 1;
        sw_parallel_for(impl_of(be)->threads, (size_t)n, min_rows, widen_rows, &j);
        par_sgemm(be, 1, m, n, k, alpha, a->data, k, j.scratch, k, beta, c->data, n);
    }
    be->free(be, j.scratch);
    return SW_OK;
}

/* compute_type "bfloat16" (bf16_gemm.h): weights [n, k] in bfloat16 (ops.c
 * admits them with trans_b only), activations rounded to bfloat16 on each
 * product. With AMX-BF16 (or its emulation) the rounded rows go to the tiles
 * and the workers take whole 16-column blocks; otherwise both operands are
 * widened back to float32 (exactly) for the float32 product. */
typedef struct bf16_job {
    int m, n, k, kp, parts;
    float alpha, beta;
    sw_amx_path path;
    const float *a;
    const uint16_t *w;
    uint16_t *a16, *pack;
    float *a32, *w32, *c;
} bf16_job;

static void bf16_round_rows(void *ctx, size_t begin, size_t end)
{
    const bf16_job *j = ctx;
    for (size_t r = begin; r < end; r++) {
        const float *x = j->a + r * (size_t)j->k;
        if (j->a16) {
            uint16_t *row = j->a16 + r * (size_t)j->kp;
            sw_bf16_round(x, (size_t)j->k, row);
            memset(row + j->k, 0, (size_t)(j->kp - j->k) * sizeof *row);
        } else {
            sw_bf16_round_f32(x, (size_t)j->k, j->a32 + r * (size_t)j->k);
        }
    }
}

static void bf16_widen_rows(void *ctx, size_t begin, size_t end)
{
    const bf16_job *j = ctx;
    sw_bf16_widen(j->w + begin * (size_t)j->k, (end - begin) * (size_t)j->k,
                  j->w32 + begin * (size_t)j->k);
}

static void bf16_tile_parts(void *ctx, size_t begin, size_t end)
{
    const bf16_job *j = ctx;
    int blocks = (j->n + 15) / 16;
    for (size_t p = begin; p < end; p++) {
        int b0 = (int)((int64_t)blocks * (int64_t)p / j->parts);
        int b1 = (int)((int64_t)blocks * (int64_t)(p + 1) / j->parts);
        int j1 = 16 * b1 < j->n ? 16 * b1 : j->n;
        if (j1 > 16 * b0)
            sw_bf16_gemm_tiles(j->path, j->m, 16 * b0, j1, j->n, j->k, j->a16, j->w, j->alpha,
                               j->beta, j->c, j->n, j->pack + p * 32 * (size_t)j->kp);
    }
}

static sw_status matmul_bf16(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                             float alpha, float beta, sw_error *err)
{
    int m = (int)a->shape[0], k = (int)a->shape[1], n = (int)c->shape[1];
    int threads = sw_threadpool_size(impl_of(be)->threads);
    bf16_job j = {.m = m,
                  .n = n,
                  .k = k,
                  .kp = sw_bf16_padded_k(k),
                  .parts = 1,
                  .alpha = alpha,
                  .beta = beta,
                  .a = a->data,
                  .w = b->data,
                  .c = c->data};
    j.path = m >= SW_AMX_MIN_ROWS ? sw_amx_bf16_path() : SW_AMX_NONE;
    size_t min_rows = k < 16384 ? (size_t)(16384 / k) : 1;
    if (j.path != SW_AMX_NONE) {
        if (threads > 1 && n >= 32 * threads)
            j.parts = threads;
        j.a16 = be->alloc(be, (size_t)m * (size_t)j.kp * sizeof(uint16_t), err);
        j.pack = j.a16 ? be->alloc(be, (size_t)j.parts * 32 * (size_t)j.kp * sizeof(uint16_t), err)
                       : NULL;
        if (j.pack) {
            sw_parallel_for(impl_of(be)->threads, (size_t)m, min_rows, bf16_round_rows, &j);
            sw_parallel_for(impl_of(be)->threads, (size_t)j.parts, 1, bf16_tile_parts, &j);
        }
        be->free(be, j.pack);
        be->free(be, j.a16);
        return err->code;
    }
    j.a32 = be->alloc(be, (size_t)m * (size_t)k * sizeof(float), err);
    j.w32 = j.a32 ? be->alloc(be, (size_t)n * (size_t)k * sizeof(float), err) : NULL;
    if (j.w32) {
        sw_parallel_for(impl_of(be)->threads, (size_t)m, min_rows, bf16_round_rows, &j);
        sw_parallel_for(impl_of(be)->threads, (size_t)n, min_rows, bf16_widen_rows, &j);
        par_sgemm(be, 1, m, n, k, alpha, j.a32, k, j.w32, k, beta, c->data, n);
    }
    be->free(be, j.w32);
    be->free(be, j.a32);
    return err->code;
}

static sw_status cpu_matmul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                            int trans_b, float alpha, float beta, sw_error *err)
{
    int m = (int)a->shape[0], k = (int)a->shape[1];
    int n = (int)c->shape[1];
    if (b->dtype == SW_F16 && k > 0)
        return matmul_half(be, a, b, c, alpha, beta, err);
    if (b->dtype == SW_BF16 && k > 0)
        return matmul_bf16(be, a, b, c, alpha, beta, err);
    if (k == 0) {
        /* an empty sum: c = beta * c (the few-rows and sgemv paths skip it) */
        float *cd = c->data;
        for (size_t i = 0; i < (size_t)m * (size_t)n; i++)
            cd[i] = beta == 0.0f ? 0.0f : beta * cd[i];
        return SW_OK;
    }
    par_sgemm(be, trans_b, m, n, k, alpha, a->data, k, b->data, (int)b->shape[1], beta, c->data, n);
    return SW_OK;
}

/* int8 products: the activation rows are quantized into pool scratch, then
 * column blocks (multiples of 16 outputs) go to the workers. Rows go in
 * chunks that stay in L1 while a block of weight rows streams past them. */
typedef struct q8_job {
    int m, n, k, parts, packed;
    const float *a;
    int8_t *qa;
    float *sa;
    const int8_t *w;
    const float *w_scale;
    const int32_t *w_sum;
    float *c;
    float beta;
} q8_job;

#define Q8_ROW_CHUNK 32

static void q8_quantize_part(void *ctx, size_t begin, size_t end)
{
    const q8_job *j = ctx;
    sw_q8_quantize_rows(j->a + begin * (size_t)j->k, (int)(end - begin), j->k, j->k,
                        j->qa + begin * (size_t)j->k, j->sa + begin);
}

static void q8_gemm_part(void *ctx, size_t begin, size_t end)
{
    const q8_job *j = ctx;
    for (size_t p = begin; p < end; p++) {
        int c0, c1;
        column_part(j->n, (int)p, j->parts, &c0, &c1);
        for (int r0 = 0; r0 < j->m && c1 > c0; r0 += Q8_ROW_CHUNK) {
            int rows = j->m - r0 < Q8_ROW_CHUNK ? j->m - r0 : Q8_ROW_CHUNK;
            const int8_t *qa = j->qa + (size_t)r0 * (size_t)j->k;
            float *c = j->c + (size_t)r0 * (size_t)j->n;
            if (j->packed)
                sw_q8_gemm_nt_packed(rows, c0, c1, j->n, j->k, qa, j->sa + r0, j->w, j->w_scale,
                                     j->w_sum, j->beta, c, j->n);
            else
                sw_q8_gemm_nt(rows, c0, c1, j->k, qa, j->sa + r0, j->w, j->w_scale, j->w_sum,
                              j->beta, c, j->n);
        }
    }
}

static sw_status cpu_matmul_q8(sw_backend *be, const sw_tensor *a, const sw_tensor *w,
                               const sw_tensor *w_scale, const sw_tensor *w_sum, sw_tensor *c,
                               float beta, sw_error *err)
{
    int m = (int)a->shape[0], k = (int)a->shape[1], n = (int)w->shape[0];
    int8_t *qa = cpu_alloc(be, (size_t)m * (size_t)k, err);
    float *sa = qa ? cpu_alloc(be, (size_t)m * sizeof(float), err) : NULL;
    if (!sa) {
        cpu_free(be, qa);
        return err->code;
    }
    int threads = sw_threadpool_size(impl_of(be)->threads);
    q8_job j = {.m = m,
                .n = n,
                .k = k,
                .parts = 1,
                .packed = w->dtype == SW_I8_PACKED,
                .a = a->data,
                .qa = qa,
                .sa = sa,
                .w = w->data,
                .w_scale = w_scale->data,
                .w_sum = w_sum->data,
                .c = c->data,
                .beta = beta};
    sw_parallel_for(impl_of(be)->threads, (size_t)m, 64, q8_quantize_part, &j);
    if (threads > 1 && (double)m * n * k > 1e6 && n >= 64 * threads)
        j.parts = threads;
    sw_parallel_for(impl_of(be)->threads, (size_t)j.parts, 1, q8_gemm_part, &j);
    cpu_free(be, qa);
    cpu_free(be, sa);
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

/* out = a + b or a * b with b repeating every b_len values: row by row, so
 * that the inner loops vectorise (no division per element, pointers held in
 * locals rather than read through the job). */
static void broadcast_range(const ew_job *j, size_t begin, size_t end)
{
    const float *a = j->a, *b = j->b;
    float *out = j->out;
    if (begin >= end)
        return;
    size_t i = begin, k = begin % j->b_len;
    while (i < end) {
        size_t n = j->b_len - k < end - i ? j->b_len - k : end - i;
        if (j->op == EW_ADD)
            for (size_t x = 0; x < n; x++)
                out[i + x] = a[i + x] + b[k + x];
        else
            for (size_t x = 0; x < n; x++)
                out[i + x] = a[i + x] * b[k + x];
        i += n;
        k = 0;
    }
}

/* GELU is the one element-wise op with real arithmetic (Whisper's encoder
 * MLP): built for each CPU level so that it runs 8 or 16 lanes wide. The
 * file is compiled without contraction, so every level gives the same bits. */
SW_ALWAYS_INLINE void gelu_span_body(const float *a, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = sw_gelu_f(a[i]);
}
SW_VOID_MULTIVERSION(static, gelu_span, (const float *a, float *out, size_t n), (a, out, n))

static void ew_range(void *ctx, size_t begin, size_t end)
{
    const ew_job *j = ctx;
    switch (j->op) {
    case EW_ADD:
    case EW_MUL: broadcast_range(j, begin, end); break;
    case EW_SCALE:
        for (size_t i = begin; i < end; i++)
            j->out[i] = j->a[i] * j->s;
        break;
    case EW_GELU: gelu_span(j->a + begin, j->out + begin, end - begin); break;
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
        float mx = sw_cpu_row_max(x, j->len);
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

/* ---- ABI 2: transpose, conv1d, row gather/scatter, attention ---- */

typedef struct transpose_job {
    const float *a;
    float *out;
    size_t rows, cols; /* of each input matrix */
} transpose_job;

/* One item per output row: out[m, c, :] = a[m, :, c]. */
static void transpose_range(void *ctx, size_t begin, size_t end)
{
    const transpose_job *j = ctx;
    for (size_t item = begin; item < end; item++) {
        size_t m = item / j->cols, c = item % j->cols;
        const float *src = j->a + m * j->rows * j->cols + c;
        float *dst = j->out + item * j->rows;
        for (size_t r = 0; r < j->rows; r++)
            dst[r] = src[r * j->cols];
    }
}

static sw_status cpu_transpose(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    size_t rows = (size_t)a->shape[a->ndim - 2], cols = (size_t)a->shape[a->ndim - 1];
    size_t per = rows * cols;
    size_t mats = per > 0 ? (size_t)sw_tensor_numel(a) / per : 0;
    transpose_job j = {a->data, out->data, rows, cols};
    sw_parallel_for(impl_of(be)->threads, mats * cols, 16, transpose_range, &j);
    return SW_OK;
}

typedef struct im2col_job {
    const float *x; /* [t_in, c_in] */
    float *cols;    /* [rows, c_in * k], column index ci * k + kk as in w's layout */
    int64_t t_in, c_in, k, stride, pad;
    int64_t t0; /* the output frame of cols' first row */
} im2col_job;

static void im2col_range(void *ctx, size_t begin, size_t end)
{
    const im2col_job *j = ctx;
    int64_t width = j->c_in * j->k;
    if (j->c_in == 1) { /* a row is a stretch of x (SincNet's first layer): copy it whole */
        for (int64_t i = (int64_t)begin; i < (int64_t)end; i++) {
            int64_t first = (j->t0 + i) * j->stride - j->pad; /* x's index of tap 0 */
            int64_t lo = first < 0 ? -first : 0;
            int64_t hi = j->t_in - first < j->k ? j->t_in - first : j->k;
            float *row = j->cols + i * width;
            if (hi <= lo) {
                memset(row, 0, (size_t)j->k * sizeof(float));
                continue;
            }
            memset(row, 0, (size_t)lo * sizeof(float));
            memcpy(row + lo, j->x + first + lo, (size_t)(hi - lo) * sizeof(float));
            memset(row + hi, 0, (size_t)(j->k - hi) * sizeof(float));
        }
        return;
    }
    for (int64_t i = (int64_t)begin; i < (int64_t)end; i++) {
        int64_t t = j->t0 + i;
        float *row = j->cols + i * width;
        for (int64_t kk = 0; kk < j->k; kk++) {
            int64_t ti = t * j->stride + kk - j->pad;
            if (ti < 0 || ti >= j->t_in) {
                for (int64_t ci = 0; ci < j->c_in; ci++)
                    row[ci * j->k + kk] = 0.0f;
                continue;
            }
            const float *src = j->x + ti * j->c_in;
            for (int64_t ci = 0; ci < j->c_in; ci++)
                row[ci * j->k + kk] = src[ci];
        }
    }
}

/* Output frames a conv1d unfolds and multiplies at a time: a block of im2col
 * rows (about 1 MB) is still in the cache when sgemm reads it, where the
 * whole unfolding (SincNet's first layer: 16 MB a window) went to memory and
 * back. */
#define CONV1D_BLOCK_FLOATS (1 << 18)
/* Up to this many output frames a conv1d is one product (see below). */
#define CONV1D_WHOLE_FRAMES 4096

typedef struct conv1d_job {
    const float *x, *w, *bias;
    float *out, *cols; /* cols: one block of im2col rows per part */
    int64_t t_in, c_in, k, stride, pad, t_out, c_out, block;
    int parts;
} conv1d_job;

/* One part of the output frames (par_sgemm's rows split), unfolded and
 * multiplied a block at a time by the thread that owns it: its im2col block
 * stays in that core's cache, and a convolution is one job on the pool
 * instead of two per block. */
static void conv1d_parts(void *ctx, size_t begin, size_t end)
{
    const conv1d_job *j = ctx;
    int64_t width = j->c_in * j->k;
    for (size_t p = begin; p < end; p++) {
        int64_t r0 = j->t_out * (int64_t)p / j->parts, r1 = j->t_out * (int64_t)(p + 1) / j->parts;
        float *cols = j->cols + (int64_t)p * j->block * width;
        for (int64_t t0 = r0; t0 < r1; t0 += j->block) {
            int64_t rows = r1 - t0 < j->block ? r1 - t0 : j->block;
            float *o = j->out + t0 * j->c_out;
            im2col_job u = {j->x, cols, j->t_in, j->c_in, j->k, j->stride, j->pad, t0};
            im2col_range(&u, 0, (size_t)rows);
            if (j->bias)
                for (int64_t t = 0; t < rows; t++)
                    memcpy(o + t * j->c_out, j->bias, (size_t)j->c_out * sizeof(float));
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->c_out,
                        (int)width, 1.0f, cols, (int)width, j->w, (int)width, j->bias ? 1.0f : 0.0f,
                        o, (int)j->c_out);
        }
    }
}

/* im2col then sgemm: out[t, co] = cols[t, :] . w[co, :], each thread on its
 * own range of output frames, block by block (conv1d_parts). */
static sw_status cpu_conv1d(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                            const sw_tensor *bias, int stride, int pad, sw_tensor *out,
                            sw_error *err)
{
    int64_t b = x->shape[0], t_in = x->shape[1], c_in = x->shape[2];
    int64_t c_out = w->shape[0], k = w->shape[2], t_out = out->shape[1];
    int64_t width = c_in * k;
    if (b == 0 || t_out == 0 || c_out == 0)
        return SW_OK;
    int threads = sw_threadpool_size(impl_of(be)->threads);
    double flops = 2.0 * (double)t_out * (double)c_out * (double)width;
    /* Only long inputs are cut (SincNet's): OpenBLAS chooses how it tiles
     * the rows of a product from their count (a last chunk between one and
     * two of its panels is halved), so a block's rows may fall on other
     * tiles than in one product and change their last bits; rows at the end
     * of a 1088-row block differed by up to 1.3e-5 (test_diar_ops). Whisper's
     * convolutions (3000 and 1500 frames) stay one product, as par_sgemm
     * splits it, and keep their bits (cutting them had moved an int8
     * golden's timestamp by 0.4 s). */
    int parts = threads > 1 && flops > 2e6 && t_out >= 16 * threads ? threads : 1;
    int by_parts = t_out > CONV1D_WHOLE_FRAMES;
    int64_t per_part = (t_out + parts - 1) / parts, block = t_out;
    if (by_parts) { /* a multiple of 64 rows, at most a part */
        block = CONV1D_BLOCK_FLOATS / width / 64 * 64;
        block = block < 256 ? 256 : block > per_part ? per_part : block;
    }
    int64_t floats = by_parts ? parts * block * width : t_out * width;
    float *cols = cpu_alloc(be, (size_t)floats * sizeof(float), err);
    if (!cols)
        return err->code;
    for (int64_t i = 0; i < b; i++) {
        conv1d_job j = {(const float *)x->data + i * t_in * c_in,
                        w->data,
                        bias ? bias->data : NULL,
                        (float *)out->data + i * t_out * c_out,
                        cols,
                        t_in,
                        c_in,
                        k,
                        stride,
                        pad,
                        t_out,
                        c_out,
                        block,
                        parts};
        if (by_parts) {
            sw_parallel_for(impl_of(be)->threads, (size_t)parts, 1, conv1d_parts, &j);
            continue;
        }
        /* one product: unfold on the pool, multiply through par_sgemm */
        float *o = j.out;
        if (bias)
            for (int64_t t = 0; t < t_out; t++)
                memcpy(o + t * c_out, bias->data, (size_t)c_out * sizeof(float));
        im2col_job u = {j.x, cols, t_in, c_in, k, stride, pad, 0};
        sw_parallel_for(impl_of(be)->threads, (size_t)t_out, 32, im2col_range, &u);
        par_sgemm(be, 1, (int)t_out, (int)c_out, (int)width, 1.0f, cols, (int)width, w->data,
                  (int)width, bias ? 1.0f : 0.0f, o, (int)c_out);
    }
    cpu_free(be, cols);
    return SW_OK;
}

typedef struct gather_job {
    const void *table; /* float32, or float16 (a Whisper model's mapped embedding) */
    int half;
    const int32_t *ids;
    float *out;
    int64_t len, rows;
} gather_job;

static void gather_range(void *ctx, size_t begin, size_t end)
{
    const gather_job *j = ctx;
    for (size_t i = begin; i < end; i++) {
        float *dst = j->out + (int64_t)i * j->len;
        int32_t id = j->ids[i];
        if (id >= 0 && id < j->rows && j->half)
            sw_widen_f16_fast((const unsigned char *)j->table + (int64_t)id * j->len * 2, dst,
                              (size_t)j->len);
        else if (id >= 0 && id < j->rows)
            memcpy(dst, (const float *)j->table + (int64_t)id * j->len,
                   (size_t)j->len * sizeof(float));
        else
            memset(dst, 0, (size_t)j->len * sizeof(float));
    }
}

/* Split over the pool: the convolutions of CAM++ and the ResNet gather
 * their im2col rows with it, and a serial copy left the other threads
 * waiting. */
static sw_status cpu_gather_rows(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                 sw_tensor *out, sw_error *err)
{
    int64_t len = sw_row_len(table), n = sw_tensor_numel(ids);
    gather_job j = {table->data, table->dtype == SW_F16, ids->data, out->data, len, sw_rows(table)};
    size_t min_rows = len > 0 && len < 4096 ? (size_t)(4096 / len) : 1;
    sw_parallel_for(impl_of(be)->threads, (size_t)n, min_rows, gather_range, &j);
    return SW_OK;
}

static sw_status cpu_scatter_rows(sw_backend *be, const sw_tensor *src, const sw_tensor *ids,
                                  sw_tensor *dst, sw_error *err)
{
    int64_t len = sw_row_len(dst), rows = sw_rows(dst), n = sw_tensor_numel(ids);
    const int32_t *id = ids->data;
    for (int64_t i = 0; i < n; i++)
        if (id[i] >= 0 && id[i] < rows)
            memcpy((float *)dst->data + (int64_t)id[i] * len, (const float *)src->data + i * len,
                   (size_t)len * sizeof(float));
    return SW_OK;
}

static sw_status cpu_attention(sw_backend *be, const sw_tensor *q, const sw_tensor *k,
                               const sw_tensor *v, const sw_attention_params *p, sw_tensor *out,
                               sw_tensor *probs, sw_error *err)
{
    sw_threadpool *tp = impl_of(be)->threads;
    if (probs) {
        sw_cpu_attention(tp, q, k, v, p, out, probs->data, 1);
        return SW_OK;
    }
    size_t floats = sw_cpu_attention_scratch(tp, q, p);
    float *scratch = floats ? cpu_alloc(be, floats * sizeof(float), err) : NULL;
    if (floats && !scratch)
        return err->code;
    sw_cpu_attention(tp, q, k, v, p, out, scratch, 0);
    if (scratch)
        cpu_free(be, scratch);
    return SW_OK;
}

/* ---- ABI 3: kernels in cpu_seq_ops.c on this backend's worker pool ---- */

static sw_status cpu_leaky_relu(sw_backend *be, const sw_tensor *a, float alpha, sw_tensor *out,
                                sw_error *err)
{
    return sw_cpu_leaky_relu(impl_of(be)->threads, a, alpha, out);
}

static sw_status cpu_abs(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    return sw_cpu_abs(impl_of(be)->threads, a, out);
}

static sw_status cpu_max_pool1d(sw_backend *be, const sw_tensor *x, int kernel, int stride,
                                sw_tensor *out, sw_error *err)
{
    return sw_cpu_max_pool1d(impl_of(be)->threads, x, kernel, stride, out);
}

static sw_status cpu_instance_norm(sw_backend *be, const sw_tensor *x, const sw_tensor *gamma,
                                   const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err)
{
    return sw_cpu_instance_norm(impl_of(be)->threads, x, gamma, beta, eps, out);
}

static sw_status cpu_log_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    return sw_cpu_log_softmax(impl_of(be)->threads, a, out);
}

static sw_status cpu_lstm(sw_backend *be, const sw_tensor *x, const sw_tensor *w_ih,
                          const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                          sw_tensor *out, sw_error *err)
{
    return sw_cpu_lstm(be, impl_of(be)->threads, x, w_ih, w_hh, bias, state, out, err);
}

static sw_status cpu_stats_pool(sw_backend *be, const sw_tensor *x, const sw_tensor *w, double eps,
                                sw_tensor *out, sw_error *err)
{
    sw_cpu_stats_pool(impl_of(be)->threads, x, w, eps, out);
    return SW_OK;
}

static sw_status cpu_magnitude(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cpu_magnitude(impl_of(be)->threads, a, out);
    return SW_OK;
}

static sw_status cpu_l2_normalize(sw_backend *be, const sw_tensor *a, float eps, sw_tensor *out,
                                  sw_error *err)
{
    sw_cpu_l2_normalize(impl_of(be)->threads, a, eps, out);
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

const char *sw_cpu_blas_kernels(void)
{
    return openblas_get_corename();
}

/* The CPU backend's table, every slot by name in backend.h's order
 * (tests/test_c_structure.py holds both), counters and search_step NULL:
 * no device of its own, the search downloads nothing. */
static const sw_backend cpu_table = {
    .abi = SW_BACKEND_ABI,
    .kind = SW_DEVICE_CPU,
    .name = "cpu",
    .impl = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .memory = cpu_memory,
    .trim = cpu_trim,
    .device_info = cpu_device_info,
    .upload = cpu_copy,
    .download = cpu_copy,
    .synchronize = cpu_sync,
    .matmul = cpu_matmul,
    .add = cpu_add,
    .mul = cpu_mul,
    .scale = cpu_scale,
    .gelu = cpu_gelu,
    .softmax = cpu_softmax,
    .layernorm = cpu_layernorm,
    .convert = cpu_convert,
    .transpose = cpu_transpose,
    .conv1d = cpu_conv1d,
    .gather_rows = cpu_gather_rows,
    .scatter_rows = cpu_scatter_rows,
    .attention = cpu_attention,
    .leaky_relu = cpu_leaky_relu,
    .absolute = cpu_abs,
    .max_pool1d = cpu_max_pool1d,
    .instance_norm = cpu_instance_norm,
    .log_softmax = cpu_log_softmax,
    .lstm = cpu_lstm,
    .matmul_q8 = cpu_matmul_q8,
    .stats_pool = cpu_stats_pool,
    .magnitude = cpu_magnitude,
    .l2_normalize = cpu_l2_normalize,
    .supports = sw_cpu_entry_supports,
    .prepare_linear = sw_cpu_entry_prepare_linear,
    .prepare_q8 = sw_cpu_entry_prepare_q8,
    .gather_linear = sw_cpu_entry_gather_linear,
    .prepare_conv3x3 = sw_cpu_entry_prepare_conv3x3,
    .conv3x3 = sw_cpu_entry_conv3x3,
    .conv3x3_single = sw_cpu_entry_conv3x3_single,
    .affine_relu_rows = sw_cpu_entry_affine_relu_rows,
    .span_abs_pool = sw_cpu_entry_span_abs_pool,
    .counters = NULL,
    .search_step = NULL,
    .destroy = cpu_destroy,
    .capture_begin = NULL, /* the CPU runs every op as it is asked: nothing to capture */
    .capture_end = NULL,
    .graph_launch = NULL,
    .graph_free = NULL,
    .fbank = NULL, /* features are the host's (audio/fbank.c): no copy to spare */
    .gather_centered = NULL,
    .conv1d_work = NULL, /* nothing to capture (above): conv1d serves */
    .mel_power = NULL,   /* GE2E's mels are the host's (audio/mel.c) */
    .gather_scaled = NULL,
};

sw_status sw_cpu_backend_open(int n_threads, sw_backend **out, sw_error *err)
{
    *out = NULL;
    if (n_threads > 1024)
        return sw_fail(err, SW_ERR_ARG, "threads must be at most 1024, got %d", n_threads);
    if (sw_cpu_dispatch_check(err) != SW_OK)
        return err->code;
    sw_backend *b = calloc(1, sizeof *b);
    cpu_impl *impl = calloc(1, sizeof *impl);
    if (!b || !impl) {
        free(b);
        free(impl);
        return sw_fail(err, SW_ERR_NOMEM, "cannot allocate the CPU backend");
    }
    *b = cpu_table;
    b->impl = impl;
    impl->pool = sw_pool_create("cpu", sw_host_raw_allocator(), 64);
    impl->threads = sw_threadpool_create(n_threads);
    if (!impl->pool || !impl->threads) {
        cpu_destroy(b);
        return sw_fail(err, SW_ERR_NOMEM, "cannot create the CPU pools");
    }
    /* Our pool splits every product (see par_sgemm): BLAS itself stays
     * single-threaded, so its idle threads never spin beside our loops. */
    openblas_set_num_threads(1);
    *out = b;
    return SW_OK;
}
