#include "cpu_gather_linear.h"

#include <cblas.h>
#include <stdint.h>
#include <string.h>

#include "cpu_workers.h"
#include "elementwise_math.h"
#include "narrow_gemm.h"

typedef struct gl_job {
    const float *x; /* [x_rows, c_in] */
    int64_t x_rows, c_in;
    const int32_t *ids; /* [n_out * taps], or NULL: row r is x's row r */
    int taps;
    const float *w, *bias; /* w [c_out, taps * c_in], bias [c_out] or NULL */
    const float *wt;       /* or w transposed, [taps * c_in, c_out], for narrow_gemm */
    int relu;
    float *y; /* [n_out, c_out] */
    int64_t n_out, c_out, block;
    float *scratch;     /* slots x block x width floats (or row pointers) */
    const float *zeros; /* c_in zeros: the taps out of range */
    int64_t slot_floats;
    int *busy; /* one flag a slot */
    int slots;
} gl_job;

/* bias and ReLU as sw_add then sw_leaky_relu(0) compute them: v + b, then
 * sw_leaky_relu_bits with alpha 0 (so -0.0 for negatives: the same bits) */
static void finish_rows(float *restrict y, int64_t rows, int64_t n, const float *restrict bias,
                        int relu)
{
    for (int64_t r = 0; r < rows; r++) {
        float *restrict row = y + r * n;
        if (bias)
            for (int64_t c = 0; c < n; c++)
                row[c] = row[c] + bias[c];
        if (relu)
            for (int64_t c = 0; c < n; c++)
                row[c] = sw_leaky_relu_bits(row[c], 0u);
    }
}

/* Blocks [begin, end), each gathered, multiplied and finished by this thread
 * while its rows are in this core's cache. */
static void gl_blocks(void *ctx, size_t begin, size_t end)
{
    const gl_job *j = ctx;
    int64_t width = j->taps * j->c_in;
    float *cols = NULL;
    int slot = -1;
    if (j->ids || j->wt) /* a range runs on one thread, and at most `slots` run at once */
        for (slot = 0;; slot = (slot + 1) % j->slots)
            if (!__atomic_exchange_n(&j->busy[slot], 1, __ATOMIC_ACQUIRE))
                break;
    if (slot >= 0)
        cols = j->scratch + (int64_t)slot * j->slot_floats;
    for (size_t b = begin; b < end; b++) {
        int64_t r0 = (int64_t)b * j->block;
        int64_t rows = j->n_out - r0 < j->block ? j->n_out - r0 : j->block;
        const float *a = j->x + r0 * j->c_in; /* no ids: x's rows themselves */
        float *y = j->y + r0 * j->c_out;
        if (j->wt) { /* the narrow kernel reads the rows (or taps) where they lie */
            const float **p = (const float **)(void *)cols;
            if (j->ids) {
                const int32_t *id = j->ids + r0 * j->taps;
                for (int64_t i = 0; i < rows * j->taps; i++)
                    p[i] = id[i] >= 0 && id[i] < j->x_rows ? j->x + (int64_t)id[i] * j->c_in
                                                           : j->zeros;
            } else {
                for (int64_t i = 0; i < rows; i++)
                    p[i] = a + i * j->c_in;
            }
            sw_narrow_gemm_rows(rows, j->c_out, j->ids ? j->taps : 1, j->ids ? j->c_in : width, p,
                                j->wt, y, j->c_out, 0);
            finish_rows(y, rows, j->c_out, j->bias, j->relu);
            continue;
        }
        if (j->ids) {
            const int32_t *id = j->ids + r0 * j->taps;
            for (int64_t i = 0; i < rows * j->taps; i++) {
                float *dst = cols + i * j->c_in;
                if (id[i] >= 0 && id[i] < j->x_rows)
                    memcpy(dst, j->x + (int64_t)id[i] * j->c_in, (size_t)j->c_in * sizeof(float));
                else
                    memset(dst, 0, (size_t)j->c_in * sizeof(float));
            }
            a = cols;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)j->c_out, (int)width,
                    1.0f, a, (int)width, j->w, (int)width, 0.0f, y, (int)j->c_out);
        finish_rows(y, rows, j->c_out, j->bias, j->relu);
    }
    if (slot >= 0)
        __atomic_store_n(&j->busy[slot], 0, __ATOMIC_RELEASE);
}

sw_status sw_cpu_gather_linear(const sw_tensor *x, const sw_tensor *ids, int taps,
                               const sw_tensor *w, int w_transposed, const sw_tensor *bias,
                               int relu, int64_t block, sw_tensor *y, sw_error *err)
{
    sw_backend *be = x->backend;
    if (be->kind != SW_DEVICE_CPU)
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_gather_linear: the tensors are not on the CPU");
    int64_t c_in = sw_row_len(x), width = (int64_t)taps * c_in;
    int64_t n_out = ids ? sw_tensor_numel(ids) / taps : sw_rows(x);
    int64_t c_out = w_transposed ? w->shape[1] : w->shape[0];
    if (w_transposed && !sw_narrow_gemm_ok(c_out))
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_gather_linear: no narrow kernel for %lld outputs",
                       (long long)c_out);
    if (n_out == 0 || c_out == 0)
        return SW_OK;
    int threads = sw_cpu_backend_threads(be);
    /* A gathered block must stay in the cache, and two a thread leave little
     * to wait for when a thread starts late. A plain product's block is as
     * large as a thread's share: sgemm packs the weight again for every call. */
    int64_t shares = ids ? 2 * threads : threads;
    int64_t even = (n_out + shares - 1) / shares;
    block = block > even ? even : block;
    block = block < 16 ? 16 : block;
    int64_t blocks = (n_out + block - 1) / block;
    gl_job j = {.x = x->data,
                .x_rows = sw_rows(x),
                .c_in = c_in,
                .ids = ids ? ids->data : NULL,
                .taps = taps,
                .w = w->data,
                .bias = bias ? bias->data : NULL,
                .wt = w_transposed ? w->data : NULL,
                .relu = relu,
                .y = y->data,
                .n_out = n_out,
                .c_out = c_out,
                .block = block,
                .slots = threads};
    void *mem = NULL;
    if (ids || w_transposed) { /* per slot: a block's gathered rows, or its row pointers */
        size_t per_slot = ids ? (size_t)block * (size_t)width * sizeof(float) : 0;
        size_t pointers = (size_t)block * (size_t)(ids ? taps : 1) * sizeof(float *);
        per_slot = per_slot > pointers ? per_slot : pointers;
        size_t bytes = (size_t)threads * per_slot + (size_t)c_in * sizeof(float);
        mem = be->alloc(be, bytes + (size_t)threads * sizeof(int), err);
        if (!mem)
            return err->code;
        j.scratch = mem;
        j.slot_floats = (int64_t)(per_slot / sizeof(float));
        float *zeros = (float *)mem + (size_t)threads * (per_slot / sizeof(float));
        memset(zeros, 0, (size_t)c_in * sizeof(float));
        j.zeros = zeros;
        j.busy = (int *)((char *)mem + bytes); /* after the rest */
        memset(j.busy, 0, (size_t)threads * sizeof(int));
    }
    sw_cpu_backend_parallel_for(be, (size_t)blocks, 1, gl_blocks, &j);
    if (mem)
        be->free(be, mem);
    return SW_OK;
}

/* Up to 128 outputs, where the narrow kernel was measured faster than sgemm
 * (CAM++'s 32 and 128; wider products not tried). */
int sw_cpu_gather_linear_wants_transposed(int64_t out)
{
    return out <= 128 && sw_narrow_gemm_ok(out);
}
