#include "cpu_winograd.h"

#include <cblas.h>
#include <stdint.h>
#include <string.h>

#include "cpu_workers.h"
#include "cpu_dispatch.h"
#include "narrow_gemm.h"
#include "vec_types.h"

/* Tiles (2x2 outputs each) one thread transforms and multiplies at a time:
 * their 16 x 48 transformed rows of 32 channels, in and out, are 96 KB each
 * and stay in the core's cache between the three steps. A multiple of the
 * narrow kernel's 8 and 6 rows. */
#define TILES_PER_BLOCK 48

/* *x plus the bias and the residual (either NULL), through the ReLU when
 * relu, stored to dst; channel ch onwards. */
SW_ALWAYS_INLINE void finish8(const sw_v8 *x, const float *bias, const float *res, int relu,
                              float *dst, int64_t ch)
{
    sw_v8 v = *x;
    if (bias)
        v = v + LOAD_V8(bias + ch);
    if (res)
        v = v + LOAD_V8(res + ch);
    if (relu)
        v = RELU_V8(v);
    STORE_V8(dst + ch, v);
}

/* G g G^T per (input, output) channel pair, G = [1 0 0; .5 .5 .5; .5 -.5 .5;
 * 0 0 1], in double and rounded once. */
void sw_winograd_weights(const float *w, int64_t c_in, int64_t c_out, float *u)
{
    static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    for (int64_t ci = 0; ci < c_in; ci++)
        for (int64_t co = 0; co < c_out; co++) {
            double g[3][3], gt[4][3];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    g[r][c] = w[((r * 3 + c) * c_in + ci) * c_out + co];
            for (int a = 0; a < 4; a++)
                for (int c = 0; c < 3; c++)
                    gt[a][c] = G[a][0] * g[0][c] + G[a][1] * g[1][c] + G[a][2] * g[2][c];
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++) {
                    double s = G[b][0] * gt[a][0] + G[b][1] * gt[a][1] + G[b][2] * gt[a][2];
                    u[((a * 4 + b) * c_in + ci) * c_out + co] = (float)s;
                }
        }
}

int sw_winograd_ok(int64_t c_in, int64_t c_out)
{
    return c_in > 0 && c_out > 0 && c_in % 8 == 0 && c_out % 8 == 0;
}

/* B^T d B of one tile, B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]: src[k]
 * the 16 input rows (row-major 4x4; zeros where the tile leaves the image),
 * point k's result to v + k * kstride. Row r of B^T d is a sum of two rows of
 * d; column c of that times B the same again. */
SW_ALWAYS_INLINE void input_tile_body(const float *const *src, int64_t c, float *v, int64_t kstride)
{
    /* row r of B^T d: row first[r] plus or minus row second[r] of d */
    static const int first[4] = {0, 1, 2, 1}, second[4] = {2, 2, 1, 3}, plus[4] = {0, 1, 0, 0};
    for (int r = 0; r < 4; r++) {
        const float *const *a = src + 4 * first[r], *const *b = src + 4 * second[r];
        for (int64_t ch = 0; ch < c; ch += 8) {
            sw_v8 t[4];
            for (int q = 0; q < 4; q++)
                t[q] = plus[r] ? LOAD_V8(a[q] + ch) + LOAD_V8(b[q] + ch)
                               : LOAD_V8(a[q] + ch) - LOAD_V8(b[q] + ch);
            float *o = v + 4 * r * kstride + ch;
            STORE_V8(o, t[0] - t[2]);
            STORE_V8(o + kstride, t[1] + t[2]);
            STORE_V8(o + 2 * kstride, t[2] - t[1]);
            STORE_V8(o + 3 * kstride, t[1] - t[3]);
        }
    }
}
SW_VOID_MULTIVERSION(static, input_tile,
                     (const float *const *src, int64_t c, float *v, int64_t kstride),
                     (src, c, v, kstride))

/* A^T m A, A^T = [1 1 1 0; 0 1 -1 -1], then bias, the residual and the ReLU:
 * m + k * kstride point k's products; out[i] (row-major 2x2) where output i
 * goes, NULL when it falls outside the image; res[i] its residual or NULL. */
SW_ALWAYS_INLINE void output_tile_body(const float *m, int64_t kstride, int64_t c,
                                       const float *bias, float *const *out,
                                       const float *const *res, int relu)
{
    for (int r = 0; r < 2; r++) {
        if (!out[2 * r] && !out[2 * r + 1])
            continue;
        for (int64_t ch = 0; ch < c; ch += 8) {
            sw_v8 s[4], o[2];
            for (int q = 0; q < 4; q++) { /* row r of A^T m, column q */
                const float *p = m + q * kstride + ch;
                s[q] = r == 0 ? LOAD_V8(p) + LOAD_V8(p + 4 * kstride) + LOAD_V8(p + 8 * kstride)
                              : LOAD_V8(p + 4 * kstride) - LOAD_V8(p + 8 * kstride) -
                                    LOAD_V8(p + 12 * kstride);
            }
            o[0] = s[0] + s[1] + s[2];
            o[1] = s[1] - s[2] - s[3];
            for (int i = 0; i < 2; i++)
                if (out[2 * r + i])
                    finish8(&o[i], bias, res[2 * r + i], relu, out[2 * r + i], ch);
        }
    }
}
SW_VOID_MULTIVERSION(static, output_tile,
                     (const float *m, int64_t kstride, int64_t c, const float *bias,
                      float *const *out, const float *const *res, int relu),
                     (m, kstride, c, bias, out, res, relu))

/* The strided form's weight: F(2, 3) along columns only, per kernel row df:
 * u[p, df * C_in + ci, co] = (G g[df] )[p], G as above. */
void sw_winograd_columns_weights(const float *w, int64_t c_in, int64_t c_out, float *u)
{
    static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    for (int p = 0; p < 4; p++)
        for (int df = 0; df < 3; df++)
            for (int64_t ci = 0; ci < c_in; ci++)
                for (int64_t co = 0; co < c_out; co++) {
                    double s = 0.0;
                    for (int dt = 0; dt < 3; dt++)
                        s += G[p][dt] * w[((df * 3 + dt) * c_in + ci) * c_out + co];
                    u[((int64_t)p * 3 * c_in + df * c_in + ci) * c_out + co] = (float)s;
                }
}

/* B^T d of four consecutive inputs src[0..3] (one kernel row of a strided
 * tile): point p to v + p * pstride. */
SW_ALWAYS_INLINE void input_row_body(const float *const *src, int64_t c, float *v, int64_t pstride)
{
    for (int64_t ch = 0; ch < c; ch += 8) {
        sw_v8 d0 = LOAD_V8(src[0] + ch), d1 = LOAD_V8(src[1] + ch), d2 = LOAD_V8(src[2] + ch),
              d3 = LOAD_V8(src[3] + ch);
        STORE_V8(v + ch, d0 - d2);
        STORE_V8(v + pstride + ch, d1 + d2);
        STORE_V8(v + 2 * pstride + ch, d2 - d1);
        STORE_V8(v + 3 * pstride + ch, d1 - d3);
    }
}
SW_VOID_MULTIVERSION(static, input_row,
                     (const float *const *src, int64_t c, float *v, int64_t pstride),
                     (src, c, v, pstride))

/* A^T m of one strided tile (two outputs along the row), with the bias, the
 * residual and the ReLU, as output_tile. */
SW_ALWAYS_INLINE void output_pair_body(const float *m, int64_t kstride, int64_t c,
                                       const float *bias, float *const *out,
                                       const float *const *res, int relu)
{
    for (int64_t ch = 0; ch < c; ch += 8) {
        const float *p = m + ch;
        sw_v8 m0 = LOAD_V8(p), m1 = LOAD_V8(p + kstride), m2 = LOAD_V8(p + 2 * kstride),
              m3 = LOAD_V8(p + 3 * kstride);
        sw_v8 o[2] = {m0 + m1 + m2, m1 - m2 - m3};
        for (int i = 0; i < 2; i++)
            if (out[i])
                finish8(&o[i], bias, res[i], relu, out[i], ch);
    }
}
SW_VOID_MULTIVERSION(static, output_pair,
                     (const float *m, int64_t kstride, int64_t c, const float *bias,
                      float *const *out, const float *const *res, int relu),
                     (m, kstride, c, bias, out, res, relu))

typedef struct wino_job {
    const float *x, *u, *bias, *add;
    float *y;
    int64_t h, c_in, c_out, tiles;
    int batch;
    const int64_t *off;   /* [batch + 1] columns before each image */
    const int64_t *first; /* [batch + 1] tiles before each image */
    const float *zeros;   /* C_in zeros: inputs outside an image */
    float *scratch;       /* slots x slot_floats */
    int64_t slot_floats;
    int *busy, slots;
    int relu, narrow;
    int strided;      /* rows halved, F(2, 3) along columns only */
    int points;       /* 16, or 4 when strided */
    int64_t k, h_out; /* a product's inner size (C_in, or 3 C_in); output rows */
} wino_job;

/* The image, row-tile and column-tile of global tile t. */
static void locate(const wino_job *j, int64_t t, int *b, int64_t *ti, int64_t *tj)
{
    int lo = 0, hi = j->batch - 1;
    while (lo < hi) { /* the last image whose first tile is <= t */
        int mid = (lo + hi + 1) / 2;
        if (j->first[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    int64_t w = j->off[lo + 1] - j->off[lo], tw = (w + 1) / 2, k = t - j->first[lo];
    *b = lo;
    *ti = k / tw;
    *tj = k % tw;
}

static void wino_blocks(void *ctx, size_t begin, size_t end)
{
    const wino_job *j = ctx;
    int slot = 0;
    for (;; slot = (slot + 1) % j->slots) /* a range runs on one thread */
        if (!__atomic_exchange_n(&j->busy[slot], 1, __ATOMIC_ACQUIRE))
            break;
    float *v = j->scratch + (int64_t)slot * j->slot_floats;
    float *m = v + j->points * TILES_PER_BLOCK * j->k;
    const float **rows = (const float **)(void *)(m + j->points * TILES_PER_BLOCK * j->c_out);
    int64_t kv = TILES_PER_BLOCK * j->k, km = TILES_PER_BLOCK * j->c_out;
    for (size_t blk = begin; blk < end; blk++) {
        int64_t t0 = (int64_t)blk * TILES_PER_BLOCK;
        int64_t n = j->tiles - t0 < TILES_PER_BLOCK ? j->tiles - t0 : TILES_PER_BLOCK;
        for (int64_t p = 0; p < n; p++) { /* into the transform space */
            int b;
            int64_t ti, tj;
            locate(j, t0 + p, &b, &ti, &tj);
            int64_t w = j->off[b + 1] - j->off[b];
            const float *img = j->x + j->h * j->off[b] * j->c_in, *src[16];
            int tile_rows = j->strided ? 3 : 4;
            for (int r = 0; r < tile_rows; r++)
                for (int c = 0; c < 4; c++) {
                    int64_t row = 2 * ti - 1 + r, col = 2 * tj - 1 + c;
                    src[4 * r + c] = row < 0 || row >= j->h || col < 0 || col >= w
                                         ? j->zeros
                                         : img + (row * w + col) * j->c_in;
                }
            if (j->strided)
                for (int r = 0; r < 3; r++) /* kernel row r's C_in of each point */
                    input_row(src + 4 * r, j->c_in, v + p * j->k + r * j->c_in, kv);
            else
                input_tile(src, j->c_in, v + p * j->k, kv);
        }
        for (int k = 0; k < j->points; k++) { /* the products, one a point */
            const float *vk = v + k * kv, *uk = j->u + (int64_t)k * j->k * j->c_out;
            float *mk = m + k * km;
            if (j->narrow) {
                for (int64_t p = 0; p < n; p++)
                    rows[p] = vk + p * j->k;
                sw_narrow_gemm_rows(n, j->c_out, 1, j->k, rows, uk, mk, j->c_out, 0);
            } else {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)j->c_out,
                            (int)j->k, 1.0f, vk, (int)j->k, uk, (int)j->c_out, 0.0f, mk,
                            (int)j->c_out);
            }
        }
        for (int64_t p = 0; p < n; p++) { /* back, with bias, residual and ReLU */
            int b;
            int64_t ti, tj;
            locate(j, t0 + p, &b, &ti, &tj);
            int64_t w = j->off[b + 1] - j->off[b], at = j->h_out * j->off[b] * j->c_out;
            int outs = j->strided ? 2 : 4;
            float *out[4];
            const float *res[4];
            for (int i = 0; i < outs; i++) {
                int64_t row = j->strided ? ti : 2 * ti + i / 2;
                int64_t col = 2 * tj + (j->strided ? i : i % 2);
                int inside = row < j->h_out && col < w;
                int64_t o = at + (row * w + col) * j->c_out;
                out[i] = inside ? j->y + o : NULL;
                res[i] = inside && j->add ? j->add + o : NULL;
            }
            if (j->strided)
                output_pair(m + p * j->c_out, km, j->c_out, j->bias, out, res, j->relu);
            else
                output_tile(m + p * j->c_out, km, j->c_out, j->bias, out, res, j->relu);
        }
    }
    __atomic_store_n(&j->busy[slot], 0, __ATOMIC_RELEASE);
}

/* Both forms: y's rows are h_out per column, h_out = h (stride 1) or
 * (h - 1) / 2 + 1 (strided). */
static sw_status winograd_run(const sw_tensor *x, int64_t h, int strided, int batch,
                              const int64_t *off, const sw_tensor *u, const sw_tensor *bias,
                              const sw_tensor *add, int relu, sw_tensor *y, sw_error *err)
{
    sw_backend *be = x->backend;
    if (be->kind != SW_DEVICE_CPU)
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_winograd3x3: the tensors are not on the CPU");
    int64_t c_in = sw_row_len(x), c_out = sw_row_len(y);
    int64_t h_out = strided ? (h - 1) / 2 + 1 : h,
            points = strided ? SW_WINOGRAD_STRIDED_POINTS : SW_WINOGRAD_POINTS;
    int64_t k = strided ? 3 * c_in : c_in;
    if (!sw_winograd_ok(c_in, c_out) || batch < 1 || h < 1 ||
        sw_tensor_numel(u) != points * k * c_out || sw_rows(x) != h * off[batch] ||
        sw_rows(y) != h_out * off[batch] || (bias && sw_tensor_numel(bias) != c_out) ||
        (add && sw_tensor_numel(add) != sw_tensor_numel(y)))
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_winograd3x3: shapes do not agree");
    int threads = sw_cpu_backend_threads(be);
    size_t slot_floats =
        (size_t)points * TILES_PER_BLOCK * (size_t)(k + c_out) +
        (TILES_PER_BLOCK * sizeof(const float *) + sizeof(float) - 1) / sizeof(float);
    size_t floats = (size_t)threads * slot_floats + (size_t)c_in;
    size_t bytes = floats * sizeof(float) + (size_t)(batch + 1) * sizeof(int64_t) +
                   (size_t)threads * sizeof(int);
    char *mem = be->alloc(be, bytes, err);
    if (!mem)
        return err->code;
    int64_t *first = (int64_t *)(void *)(mem + floats * sizeof(float));
    int *busy = (int *)(first + batch + 1);
    float *zeros = (float *)(void *)mem + (size_t)threads * slot_floats;
    memset(zeros, 0, (size_t)c_in * sizeof(float));
    memset(busy, 0, (size_t)threads * sizeof(int));
    first[0] = 0;
    int64_t tile_rows = strided ? h_out : (h + 1) / 2;
    for (int b = 0; b < batch; b++)
        first[b + 1] = first[b] + tile_rows * ((off[b + 1] - off[b] + 1) / 2);
    wino_job j = {.x = x->data,
                  .u = u->data,
                  .bias = bias ? bias->data : NULL,
                  .add = add ? add->data : NULL,
                  .y = y->data,
                  .h = h,
                  .c_in = c_in,
                  .c_out = c_out,
                  .tiles = first[batch],
                  .batch = batch,
                  .off = off,
                  .first = first,
                  .zeros = zeros,
                  .scratch = (float *)(void *)mem,
                  .slot_floats = (int64_t)slot_floats,
                  .busy = busy,
                  .slots = threads,
                  .relu = relu,
                  .narrow = sw_narrow_gemm_ok(c_out),
                  .strided = strided,
                  .points = (int)points,
                  .k = k,
                  .h_out = h_out};
    size_t blocks = (size_t)((j.tiles + TILES_PER_BLOCK - 1) / TILES_PER_BLOCK);
    if (blocks)
        sw_cpu_backend_parallel_for(be, blocks, 1, wino_blocks, &j);
    be->free(be, mem);
    return SW_OK;
}

sw_status sw_cpu_winograd3x3(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                             const sw_tensor *u, const sw_tensor *bias, const sw_tensor *add,
                             int relu, sw_tensor *y, sw_error *err)
{
    return winograd_run(x, h, 0, batch, off, u, bias, add, relu, y, err);
}

sw_status sw_cpu_winograd3x3_rows2(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                                   const sw_tensor *u, const sw_tensor *bias, const sw_tensor *add,
                                   int relu, sw_tensor *y, sw_error *err)
{
    return winograd_run(x, h, 1, batch, off, u, bias, add, relu, y, err);
}
