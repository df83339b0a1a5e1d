#include "selfcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "elementwise_math.h"
#include "fused_ops.h"
#include "ops.h"
#include "q8_quantize.h"

#define MAX_TENSORS 80

/* Each tensor exists twice, the same bytes on the CPU and on the device. */
typedef struct check {
    sw_backend *cpu, *dev;
    sw_tensor t[MAX_TENSORS][2];
    int n;
    uint32_t seed;
    char gpu[128];
    sw_error *err;
} check;

#define CPU(i) (&c->t[i][0])
#define DEV(i) (&c->t[i][1])

static float next_float(check *c)
{
    c->seed = c->seed * 1664525u + 1013904223u;
    return (float)(c->seed >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
}

/* A new pair holding `data` (or random floats when NULL); -1 on failure. */
static int pair(check *c, sw_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    if (c->n == MAX_TENSORS) {
        sw_fail(c->err, SW_ERR_DEVICE, "self-check: too many tensors");
        return -1;
    }
    int i = c->n;
    if (sw_tensor_new(c->cpu, dt, ndim, shape, CPU(i), c->err) != SW_OK)
        return -1;
    if (sw_tensor_new(c->dev, dt, ndim, shape, DEV(i), c->err) != SW_OK) {
        sw_tensor_free(CPU(i));
        return -1;
    }
    c->n++;
    size_t bytes = sw_tensor_nbytes(CPU(i));
    if (data) {
        memcpy(CPU(i)->data, data, bytes);
    } else {
        float *f = CPU(i)->data;
        for (size_t k = 0; k < bytes / sizeof(float); k++)
            f[k] = next_float(c);
    }
    if (c->dev->upload(c->dev, DEV(i)->data, CPU(i)->data, bytes, c->err) != SW_OK)
        return -1;
    return i;
}

static int pair_f32(check *c, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    return pair(c, SW_F32, ndim, shape, NULL);
}

/* The op's result on the device against the CPU's, float by float. */
static sw_status compare(check *c, const char *op, int i, float tol)
{
    size_t bytes = sw_tensor_nbytes(CPU(i));
    float *got = malloc(bytes ? bytes : 1);
    if (!got)
        return sw_fail(c->err, SW_ERR_NOMEM, "self-check: out of host memory");
    sw_status st = c->dev->download(c->dev, got, DEV(i)->data, bytes, c->err);
    const float *want = CPU(i)->data;
    for (size_t k = 0; st == SW_OK && k < bytes / sizeof(float); k++) {
        float g = got[k], w = want[k];
        int same_special = (isnan(g) && isnan(w)) || (isinf(g) && g == w);
        if (!same_special && !(fabsf(g - w) <= tol * (1.0f + fabsf(w))))
            st = sw_fail(c->err, SW_ERR_DEVICE,
                         "saywho's self-check found that the GPU (%s) computes the %s kernel "
                         "wrong: element %zu is %g where the CPU gives %g",
                         c->gpu, op, k, (double)g, (double)w);
    }
    free(got);
    return st;
}

/* Runs an op on both backends: st_cpu and st_dev are the two calls' status. */
static sw_status ran(check *c, const char *op, sw_status st_cpu, sw_status st_dev)
{
    if (st_cpu != SW_OK)
        return sw_fail(c->err, SW_ERR_DEVICE, "self-check: the CPU's %s failed: %s", op,
                       c->err->msg);
    if (st_dev != SW_OK) {
        char why[200];
        /* the device's own message, cut to leave room for the sentence */
        memcpy(why, c->err->msg, sizeof why - 1);
        why[sizeof why - 1] = '\0';
        return sw_fail(c->err, SW_ERR_DEVICE,
                       "saywho's self-check found that the GPU (%s) fails the %s kernel: %s",
                       c->gpu, op, why);
    }
    return SW_OK;
}

/* Both calls of an op, then the comparison of output `out`. */
#define CHECK_OP(op, out, tol, ...)                                                                \
    do {                                                                                           \
        sw_status st_cpu_ = call_##op(c, 0, __VA_ARGS__);                                          \
        sw_status st_dev_ = call_##op(c, 1, __VA_ARGS__);                                          \
        if (ran(c, #op, st_cpu_, st_dev_) != SW_OK || compare(c, #op, out, tol) != SW_OK)          \
            return c->err->code;                                                                   \
    } while (0)

#define T(i) (&c->t[i][side])

static sw_status call_matmul(check *c, int side, int a, int b, int out, int trans_b, float beta)
{
    return sw_matmul(T(a), T(b), T(out), trans_b, 0.5f, beta, c->err);
}
static sw_status call_add(check *c, int side, int a, int b, int out)
{
    return sw_add(T(a), T(b), T(out), c->err);
}
static sw_status call_mul(check *c, int side, int a, int b, int out)
{
    return sw_mul(T(a), T(b), T(out), c->err);
}
static sw_status call_scale(check *c, int side, int a, int out)
{
    return sw_scale(T(a), -1.5f, T(out), c->err);
}
static sw_status call_gelu(check *c, int side, int a, int out)
{
    return sw_gelu(T(a), T(out), c->err);
}
static sw_status call_softmax(check *c, int side, int a, int out)
{
    return sw_softmax(T(a), T(out), c->err);
}
static sw_status call_layernorm(check *c, int side, int a, int g, int b, int out)
{
    return sw_layernorm(T(a), T(g), T(b), 1e-5f, T(out), c->err);
}
static sw_status call_convert(check *c, int side, int a, int half, int out)
{
    sw_status st = sw_convert(T(a), T(half), c->err);
    return st == SW_OK ? sw_convert(T(half), T(out), c->err) : st;
}
static sw_status call_transpose(check *c, int side, int a, int out)
{
    return sw_transpose(T(a), T(out), c->err);
}
static sw_status call_conv1d(check *c, int side, int x, int w, int b, int out)
{
    return sw_conv1d(T(x), T(w), T(b), 2, 1, T(out), c->err);
}
static sw_status call_gather_rows(check *c, int side, int table, int ids, int out)
{
    return sw_gather_rows(T(table), T(ids), T(out), c->err);
}
static sw_status call_scatter_rows(check *c, int side, int src, int ids, int dst)
{
    return sw_scatter_rows(T(src), T(ids), T(dst), c->err);
}
static sw_status call_attention(check *c, int side, int q, int k, int v, int out, int probs)
{
    sw_attention_params p = {2, 5, 2, 0.35f, NULL};
    return sw_attention(T(q), T(k), T(v), &p, T(out), probs < 0 ? NULL : T(probs), c->err);
}
static sw_status call_leaky_relu(check *c, int side, int a, int out)
{
    return sw_leaky_relu(T(a), 0.01f, T(out), c->err);
}
static sw_status call_abs(check *c, int side, int a, int out)
{
    return sw_abs(T(a), T(out), c->err);
}
static sw_status call_max_pool1d(check *c, int side, int x, int out)
{
    return sw_max_pool1d(T(x), 3, 3, T(out), c->err);
}
static sw_status call_instance_norm(check *c, int side, int x, int g, int b, int out)
{
    return sw_instance_norm(T(x), T(g), T(b), 1e-5f, T(out), c->err);
}
static sw_status call_log_softmax(check *c, int side, int a, int out)
{
    return sw_log_softmax(T(a), T(out), c->err);
}
static sw_status call_lstm(check *c, int side, int x, int wi, int wh, int b, int out)
{
    return sw_lstm(T(x), T(wi), T(wh), T(b), T(out), c->err);
}
static sw_status call_matmul_q8(check *c, int side, int a, int w, int ws, int wsum, int out)
{
    return sw_matmul_q8(T(a), T(w), T(ws), T(wsum), T(out), 1.0f, c->err);
}
static sw_status call_stats_pool(check *c, int side, int x, int w, int out)
{
    return sw_stats_pool(T(x), w < 0 ? NULL : T(w), 1e-7, T(out), c->err);
}
static sw_status call_magnitude(check *c, int side, int a, int out)
{
    return sw_magnitude(T(a), T(out), c->err);
}
static sw_status call_l2_normalize(check *c, int side, int a, int out)
{
    return sw_l2_normalize(T(a), 1e-12f, T(out), c->err);
}

/* compute_type float16 / bfloat16 (CUDA only: the CPU has no half products).
 * The CPU computes in float32 on values the half type holds exactly (a, x,
 * the table rounded in place); the device gets the weight as `dt` and rounds
 * the activation itself, exactly, so the results differ only in sum order. */
static void round_in_place(check *c, int i, sw_dtype dt)
{
    float *f = CPU(i)->data;
    for (int64_t k = 0; k < sw_tensor_numel(CPU(i)); k++)
        f[k] = dt == SW_F16 ? sw_f16_to_f32(sw_f32_to_f16(f[k]))
                            : sw_bf16_to_f32(sw_f32_to_bf16(f[k]));
}

/* A float32 pair of values `dt` holds, and beside it (returned) a `dt` pair
 * with the same values; the float32 one is at the returned index - 1. */
static int half_pair(check *c, sw_dtype dt, int ndim, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t shape[3] = {d0, d1, d2};
    int f = pair_f32(c, ndim, d0, d1, d2);
    int h = f < 0 ? -1 : pair(c, dt, ndim, shape, NULL);
    if (h < 0)
        return -1;
    round_in_place(c, f, dt);
    if (c->dev->upload(c->dev, DEV(f)->data, CPU(f)->data, sw_tensor_nbytes(CPU(f)), c->err) ||
        sw_convert(DEV(f), DEV(h), c->err))
        return -1;
    return h;
}

static sw_status half_checks(check *c, sw_dtype dt, float tol)
{
    const char *name = dt == SW_F16 ? "float16" : "bfloat16";
    char op[48];
    int a = pair_f32(c, 2, 5, 8, 0), w = half_pair(c, dt, 2, 6, 8, 0),
        out = pair_f32(c, 2, 5, 6, 0);
    if (out < 0)
        return c->err->code;
    round_in_place(c, a, dt);
    if (c->dev->upload(c->dev, DEV(a)->data, CPU(a)->data, sw_tensor_nbytes(CPU(a)), c->err))
        return c->err->code;
    snprintf(op, sizeof op, "%s matmul", name);
    if (ran(c, op, sw_matmul(CPU(a), CPU(w - 1), CPU(out), 1, 0.5f, 0.0f, c->err),
            sw_matmul(DEV(a), DEV(w), DEV(out), 1, 0.5f, 0.0f, c->err)) ||
        compare(c, op, out, tol))
        return c->err->code;

    int x = pair_f32(c, 3, 2, 9, 3), cw = half_pair(c, dt, 3, 4, 3, 3);
    int cb = pair_f32(c, 1, 4, 0, 0), co = pair_f32(c, 3, 2, 5, 4);
    if (co < 0)
        return c->err->code;
    round_in_place(c, x, dt);
    if (c->dev->upload(c->dev, DEV(x)->data, CPU(x)->data, sw_tensor_nbytes(CPU(x)), c->err))
        return c->err->code;
    snprintf(op, sizeof op, "%s conv1d", name);
    if (ran(c, op, sw_conv1d(CPU(x), CPU(cw - 1), CPU(cb), 2, 1, CPU(co), c->err),
            sw_conv1d(DEV(x), DEV(cw), DEV(cb), 2, 1, DEV(co), c->err)) ||
        compare(c, op, co, tol))
        return c->err->code;

    int32_t id_data[3] = {4, 0, 9};
    int64_t n_ids = 3;
    int table = half_pair(c, dt, 2, 5, 4, 0), ids = pair(c, SW_I32, 1, &n_ids, id_data);
    int rows = pair_f32(c, 2, 3, 4, 0);
    if (rows < 0)
        return c->err->code;
    snprintf(op, sizeof op, "%s gather_rows", name);
    if (ran(c, op, sw_gather_rows(CPU(table - 1), CPU(ids), CPU(rows), c->err),
            sw_gather_rows(DEV(table), DEV(ids), DEV(rows), c->err)) ||
        compare(c, op, rows, 0.0f))
        return c->err->code;
    return SW_OK;
}

static sw_status run_all(check *c)
{
    /* Tolerances: sums run in another order on the GPU (cuBLAS, block
     * reductions), a few float32 units; a wrong kernel is off by far more. */
    const float tol = 1e-4f;
    int a = pair_f32(c, 2, 5, 7, 0), b = pair_f32(c, 2, 7, 6, 0), bt = pair_f32(c, 2, 6, 7, 0);
    int out = pair_f32(c, 2, 5, 6, 0), out2 = pair_f32(c, 2, 5, 6, 0);
    if (out2 < 0)
        return c->err->code;
    CHECK_OP(matmul, out, tol, a, b, out, 0, 0.0f);
    CHECK_OP(matmul, out2, tol, a, bt, out2, 1, 1.0f);

    int x = pair_f32(c, 2, 4, 33, 0), y = pair_f32(c, 2, 4, 33, 0), row = pair_f32(c, 1, 33, 0, 0);
    int row2 = pair_f32(c, 1, 33, 0, 0);
    int r1 = pair_f32(c, 2, 4, 33, 0), r2 = pair_f32(c, 2, 4, 33, 0);
    if (r2 < 0)
        return c->err->code;
    CHECK_OP(add, r1, 0.0f, x, y, r1);
    CHECK_OP(add, r2, 0.0f, x, row, r2);
    CHECK_OP(mul, r1, 0.0f, x, row, r1);
    CHECK_OP(scale, r1, 0.0f, x, r1);
    CHECK_OP(gelu, r1, 1e-5f, x, r1); /* erff: the GPU's own, within 2 units */
    CHECK_OP(softmax, r1, tol, x, r1);
    CHECK_OP(layernorm, r2, tol, x, row, row2, r2);
    CHECK_OP(leaky_relu, r1, 0.0f, x, r1);
    CHECK_OP(abs, r1, 0.0f, x, r1);
    CHECK_OP(log_softmax, r1, tol, x, r1);
    int64_t hs[2] = {4, 33};
    int half = pair(c, SW_F16, 2, hs, NULL), bf = pair(c, SW_BF16, 2, hs, NULL);
    if (bf < 0)
        return c->err->code;
    CHECK_OP(convert, r1, 0.0f, x, half, r1);
    CHECK_OP(convert, r1, 0.0f, x, bf, r1);

    int t3 = pair_f32(c, 3, 2, 3, 5), t3o = pair_f32(c, 3, 2, 5, 3);
    if (t3o < 0)
        return c->err->code;
    CHECK_OP(transpose, t3o, 0.0f, t3, t3o);

    int cx = pair_f32(c, 3, 2, 9, 3), cw = pair_f32(c, 3, 4, 3, 3), cb = pair_f32(c, 1, 4, 0, 0);
    int co = pair_f32(c, 3, 2, 5, 4); /* (9 + 2 - 3) / 2 + 1 = 5 frames */
    if (co < 0)
        return c->err->code;
    CHECK_OP(conv1d, co, tol, cx, cw, cb, co);

    int32_t id_data[3] = {4, 0, 9}; /* 9 is out of range: zeros, or skipped */
    int64_t n_ids = 3;
    int table = pair_f32(c, 2, 5, 4, 0), ids = pair(c, SW_I32, 1, &n_ids, id_data);
    int rows = pair_f32(c, 2, 3, 4, 0), src = pair_f32(c, 2, 3, 4, 0);
    if (src < 0)
        return c->err->code;
    CHECK_OP(gather_rows, rows, 0.0f, table, ids, rows);
    CHECK_OP(scatter_rows, table, 0.0f, src, ids, table);

    /* two heads of 4, queries of two batches over one key batch, causal */
    int q = pair_f32(c, 3, 2, 3, 8), k = pair_f32(c, 3, 1, 6, 8), v = pair_f32(c, 3, 1, 6, 8);
    int ao = pair_f32(c, 3, 2, 3, 8);
    int64_t ps[4] = {2, 2, 3, 5};
    int probs = pair(c, SW_F32, 4, ps, NULL);
    if (probs < 0)
        return c->err->code;
    CHECK_OP(attention, ao, tol, q, k, v, ao, probs);
    if (compare(c, "attention", probs, tol) != SW_OK)
        return c->err->code;
    /* sixteen query rows without the weights: the GPU's tiled kernel */
    int tq = pair_f32(c, 3, 1, 16, 8), to = pair_f32(c, 3, 1, 16, 8);
    if (to < 0)
        return c->err->code;
    CHECK_OP(attention, to, tol, tq, k, v, to, -1);

    int px = pair_f32(c, 3, 1, 10, 3), po = pair_f32(c, 3, 1, 3, 3);
    int nx = pair_f32(c, 3, 2, 16, 3), ng = pair_f32(c, 1, 3, 0, 0), nb = pair_f32(c, 1, 3, 0, 0);
    int no = pair_f32(c, 3, 2, 16, 3);
    if (no < 0)
        return c->err->code;
    CHECK_OP(max_pool1d, po, 0.0f, px, po);
    CHECK_OP(instance_norm, no, tol, nx, ng, nb, no);

    /* a bidirectional layer, hidden 4 */
    int lx = pair_f32(c, 3, 2, 5, 3), lwi = pair_f32(c, 3, 2, 16, 3);
    int lwh = pair_f32(c, 3, 2, 16, 4), lb = pair_f32(c, 2, 2, 16, 0);
    int lo = pair_f32(c, 3, 2, 5, 8);
    if (lo < 0)
        return c->err->code;
    CHECK_OP(lstm, lo, tol, lx, lwi, lwh, lb, lo);

    /* int8 weights quantized as the model loaders do */
    int8_t wq[5 * 8];
    float wscale[5], wf[5 * 8];
    int32_t wsum[5];
    for (int i = 0; i < 40; i++)
        wf[i] = next_float(c);
    sw_q8_quantize_rows(wf, 5, 8, 8, wq, wscale);
    sw_q8_row_sums(wq, 5, 8, wsum);
    int64_t ws[2] = {5, 8}, n5 = 5;
    int qa = pair_f32(c, 2, 3, 8, 0), qw = pair(c, SW_I8, 2, ws, wq);
    int qs = pair(c, SW_F32, 1, &n5, wscale), qsum = pair(c, SW_I32, 1, &n5, wsum);
    int qo = pair_f32(c, 2, 3, 5, 0);
    if (qo < 0)
        return c->err->code;
    CHECK_OP(matmul_q8, qo, 1e-5f, qa, qw, qs, qsum, qo);

    /* the embeddings' pooling (two items, three groups, two weighted pools
     * each; then unweighted), the VAD's magnitudes, the L2 norm: summed in
     * the CPU's order with unfused operations, so the bits should match (the
     * emulator's do); a GPU is still given a unit of float32 rounding */
    int64_t sx[4] = {2, 3, 6, 5}, sw_[3] = {2, 2, 6};
    float weights[24];
    for (int i = 0; i < 24; i++)
        weights[i] = (float)(i % 5) * 0.25f;
    int sxi = pair(c, SW_F32, 4, sx, NULL), swi = pair(c, SW_F32, 3, sw_, weights);
    int so = pair_f32(c, 2, 4, 30, 0), so1 = pair_f32(c, 2, 2, 30, 0);
    int ma = pair_f32(c, 3, 2, 3, 10), mo = pair_f32(c, 3, 2, 3, 5);
    int la = pair_f32(c, 2, 3, 40, 0), lo2 = pair_f32(c, 2, 3, 40, 0);
    if (lo2 < 0)
        return c->err->code;
    /* a device with memory of its own (a GPU) sums in another order */
    const float exact = sw_supports(c->dev, SW_CAP_HOST_MEMORY, 0, 0) ? 0.0f : 1e-6f;
    CHECK_OP(stats_pool, so, exact, sxi, swi, so);
    CHECK_OP(stats_pool, so1, exact, sxi, -1, so1);
    CHECK_OP(magnitude, mo, exact, ma, mo);
    CHECK_OP(l2_normalize, lo2, exact, la, lo2);

    if (sw_supports(c->dev, SW_CAP_HALF_WEIGHTS, 0, 0) &&
        (half_checks(c, SW_F16, tol) != SW_OK || half_checks(c, SW_BF16, tol) != SW_OK))
        return c->err->code;
    return SW_OK;
}

sw_status sw_backend_self_check(sw_backend *dev, sw_error *err)
{
    check *c = calloc(1, sizeof *c);
    if (!c)
        return sw_fail(err, SW_ERR_NOMEM, "self-check: out of host memory");
    c->dev = dev;
    c->err = err;
    c->seed = 12345u;
    sw_device_info info;
    sw_error ignored = {SW_OK, ""};
    if (dev->device_info(dev, &info, &ignored) == SW_OK)
        snprintf(c->gpu, sizeof c->gpu, "%s", info.name);
    else
        snprintf(c->gpu, sizeof c->gpu, "%s", dev->name);
    sw_status st = sw_cpu_backend_open(1, &c->cpu, err);
    if (st == SW_OK)
        st = run_all(c);
    for (int i = 0; i < c->n; i++) {
        sw_tensor_free(CPU(i));
        sw_tensor_free(DEV(i));
    }
    if (c->cpu)
        c->cpu->destroy(c->cpu);
    free(c);
    return st;
}
