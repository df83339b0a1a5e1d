/* The CAM++ forward. Activations are rows of channels: the 2-D front keeps
 * one row per (item, frequency row, frame), the TDNN part one per (item,
 * frame). Every convolution is a gather of its input rows (the ids say which
 * row each tap reads; an id out of range reads zeros, which is the zero
 * padding) followed by one matrix product with tap-major weights: the
 * backend's gather_linear, one call. The 2-D front's 3x3 convolutions go
 * through the backend's conv3x3 (on the CPU Winograd: F(2x2, 3x3) at stride
 * 1, F(2, 3) along the frames where the rows are halved; on a GPU an im2col
 * on the device and cuBLAS) and the first layer, one channel in, through its
 * conv3x3_single. Every backend has these entries (fused_ops.h): one path,
 * and a backend without them is refused when the model is created.
 *
 * A dense block keeps its growing feature map time-major, [rows, 1024], as
 * chunks of 32 channels (one CAM layer's growth): a layer reads the first c
 * channels of every row with one gather of c / 32 chunks per row, and its 32
 * new channels go to their chunk with one scatter. (A transpose of a
 * channel-major map, strided reads, cost twice the gather.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "campp_internal.h"

/* Where each item of a batch lies: items may differ in length (a call packs
 * every (chunk, speaker) sequence of a batch of chunks, whatever its length:
 * bigger products, one call). The input has off[b] .. off[b + 1] frames of
 * item b; after the stride-2 TDNN layer it has hoff[b] .. hoff[b + 1]; its
 * context segments are soff[b] .. soff[b + 1], and its [segments, frames]
 * pooling matrix starts at poff[b]. Items never read each other's rows. */
typedef struct items {
    int batch;
    int64_t *off, *hoff, *soff, *poff; /* batch + 1 each */
} items;

static void items_free(items *it)
{
    free(it->off);
    free(it->hoff);
    free(it->soff);
    free(it->poff);
}

static sw_status items_init(items *it, const int64_t *lengths, int batch, sw_error *err)
{
    it->batch = batch;
    size_t n = (size_t)batch + 1;
    it->off = malloc(n * sizeof *it->off);
    it->hoff = malloc(n * sizeof *it->hoff);
    it->soff = malloc(n * sizeof *it->soff);
    it->poff = malloc(n * sizeof *it->poff);
    if (!it->off || !it->hoff || !it->soff || !it->poff)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    it->off[0] = it->hoff[0] = it->soff[0] = it->poff[0] = 0;
    for (int b = 0; b < batch; b++) {
        int64_t half = (lengths[b] - 1) / 2 + 1;
        int64_t segs = (half + CAMPP_SEG_LEN - 1) / CAMPP_SEG_LEN;
        it->off[b + 1] = it->off[b] + lengths[b];
        it->hoff[b + 1] = it->hoff[b] + half;
        it->soff[b + 1] = it->soff[b] + segs;
        it->poff[b + 1] = it->poff[b] + segs * half;
    }
    return SW_OK;
}

#define LEN(o, b) ((o)[(b) + 1] - (o)[b])

static sw_status fresh(sw_backend *be, sw_tensor *t, int64_t d0, int64_t d1, sw_error *err)
{
    int64_t shape[2] = {d0, d1};
    return sw_tensor_new(be, SW_F32, 2, shape, t, err);
}

/* Host ids -> an int32 tensor on the backend; `host` is freed here. */
static sw_status upload_ids(sw_backend *be, int32_t *host, int64_t n, sw_tensor *t, sw_error *err)
{
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    int64_t shape[1] = {n};
    if (sw_tensor_new(be, SW_I32, 1, shape, t, err) == SW_OK)
        be->upload(be, t->data, host, (size_t)n * sizeof *host, err);
    free(host);
    return err->code;
}

/* y [n, out] = relu?(x [n, in] w^T + b): the backend's gather_linear, taps 1 */
static sw_status linear(const sw_tensor *x, const campp_linear *l, int relu, sw_tensor *y,
                        sw_error *err)
{
    return sw_gather_linear(x, NULL, 1, &l->w, l->layout, l->b.data ? &l->b : NULL, relu,
                            sw_rows(x), y, err);
}

/* Output rows a CPU worker gathers and multiplies at a time (gather_linear's
 * `block`): its im2col block (rows x taps x C_in floats) stays in the core's
 * cache instead of going through memory twice (the gather, then BLAS's
 * packing of it). A GPU sizes its own blocks and reads no such hint. */
#define CAMPP_CONV_BLOCK_FLOATS (1 << 16)
#define CAMPP_CONV_MIN_ROWS     256

static int64_t conv_block(int taps, int64_t c_in, int64_t n_out)
{
    int64_t block = CAMPP_CONV_BLOCK_FLOATS / (taps * c_in);
    block = block < CAMPP_CONV_MIN_ROWS ? CAMPP_CONV_MIN_ROWS : block;
    return block > n_out ? n_out : block;
}

/* y [n_out, C_out] (allocated by the caller) = a convolution of x (rows of
 * C_in) whose taps `ids` [n_out * taps] name: one gather_linear. */
static sw_status conv_into(const sw_tensor *x, const sw_tensor *ids, int taps,
                           const campp_linear *l, int relu, sw_tensor *y, sw_error *err)
{
    int64_t n_out = sw_tensor_numel(ids) / taps;
    return sw_gather_linear(x, ids, taps, &l->w, l->layout, l->b.data ? &l->b : NULL, relu,
                            conv_block(taps, sw_row_len(x), n_out), y, err);
}

/* The same with y allocated here. */
static sw_status conv(sw_backend *be, const sw_tensor *x, const sw_tensor *ids, int taps,
                      const campp_linear *l, int relu, sw_tensor *y, sw_error *err)
{
    if (fresh(be, y, sw_tensor_numel(ids) / taps, campp_out(l), err) == SW_OK)
        conv_into(x, ids, taps, l, relu, y, err);
    return err->code;
}

/* --- the 2-D front: rows (item, frequency row, frame) ---------------------- */

/* y = relu?(conv3x3(x) + add) (add may be NULL): the backend's conv3x3 on
 * the weight's prepared form (on the CPU Winograd's transform). */
static sw_status conv3x3(sw_campp *m, const sw_tensor *x, const items *it, int64_t rows, int stride,
                         const campp_linear *l, int relu, const sw_tensor *add, sw_tensor *y,
                         sw_error *err)
{
    int64_t rows_out = (rows - 1) / stride + 1;
    const sw_tensor *b = l->b.data ? &l->b : NULL;
    if (fresh(m->obj.be, y, rows_out * it->off[it->batch], campp_out(l), err) == SW_OK)
        sw_conv3x3(x, rows, it->batch, it->off, &l->u, stride, b, add, relu, y, err);
    return err->code;
}

/* BasicResBlock: relu(conv2(relu(conv1 x)) + shortcut x). *x is replaced. */
static sw_status res_block(sw_campp *m, int i, sw_tensor *x, const items *it, int64_t *rows,
                           sw_error *err)
{
    int stride = i % 2 == 0 ? 2 : 1;
    int64_t rows_out = (*rows - 1) / stride + 1;
    sw_tensor a = {0}, y = {0}, ids = {0}, shortcut = {0};
    const sw_tensor *skip = x;
    if (stride != 1) { /* a 1x1 conv on every other row */
        int64_t n = rows_out * it->off[it->batch];
        int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
        for (int b = 0; id && b < it->batch; b++) {
            int64_t frames = LEN(it->off, b), base = *rows * it->off[b];
            for (int64_t fo = 0; fo < rows_out; fo++)
                for (int64_t t = 0; t < frames; t++)
                    *p++ = (int32_t)(base + 2 * fo * frames + t);
        }
        upload_ids(m->obj.be, id, n, &ids, err);
        if (err->code == SW_OK)
            conv(m->obj.be, x, &ids, 1, &m->res_short[i / 2], 0, &shortcut, err);
        skip = &shortcut;
    }
    if (err->code == SW_OK &&
        conv3x3(m, x, it, *rows, stride, &m->res[i][0], 1, NULL, &a, err) == SW_OK)
        conv3x3(m, &a, it, rows_out, 1, &m->res[i][1], 1, skip, &y, err);
    sw_tensor_free(&a);
    sw_tensor_free(&ids);
    sw_tensor_free(&shortcut);
    sw_tensor_free(x);
    *x = y;
    *rows = rows_out;
    return err->code;
}

/* features [total, 80] (on the backend) -> [total, 320], channel c * 10 + row
 * f as CAMPPlus flattens (channels, rows). *x is replaced. */
static sw_status head(sw_campp *m, sw_tensor *x, const items *it, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int64_t rows = SW_CAMPP_FEAT_DIM, total = it->off[it->batch];
    sw_tensor by_row = {0}, y = {0};
    if (fresh(be, &by_row, rows * total, 1, err) == SW_OK) {
        for (int b = 0; b < it->batch && err->code == SW_OK; b++) {
            int64_t t = LEN(it->off, b), at = it->off[b] * rows;
            sw_tensor src = sw_tensor_slice(x, at, 2, t, rows, 0);
            sw_tensor dst = sw_tensor_slice(&by_row, at, 2, rows, t, 0);
            sw_transpose(&src, &dst, err);
        }
        sw_tensor_free(x);
        const campp_linear *c1 = &m->head_conv1; /* [9, 32] (campp_weights.c) */
        if (err->code == SW_OK && fresh(be, &y, rows * total, campp_out(c1), err) == SW_OK)
            sw_conv3x3_single(&by_row, rows, it->batch, it->off, &c1->w, c1->b.data ? &c1->b : NULL,
                              1, &y, err);
    }
    sw_tensor_free(&by_row);
    sw_tensor_free(x);
    *x = y;
    for (int i = 0; i < CAMPP_RES_BLOCKS && err->code == SW_OK; i++)
        res_block(m, i, x, it, &rows, err);
    memset(&y, 0, sizeof y);
    if (err->code == SW_OK)
        conv3x3(m, x, it, rows, 2, &m->head_conv2, 1, NULL, &y, err);
    sw_tensor_free(x);
    rows = (rows - 1) / 2 + 1;
    sw_tensor flat = {0};
    if (err->code == SW_OK && fresh(be, &flat, total, CAMPP_HEAD_CHANNELS * rows, err) == SW_OK) {
        for (int b = 0; b < it->batch && err->code == SW_OK; b++) {
            int64_t t = LEN(it->off, b), at = it->off[b] * rows * CAMPP_HEAD_CHANNELS;
            sw_tensor src = sw_tensor_slice(&y, at, 2, rows, t * CAMPP_HEAD_CHANNELS, 0);
            sw_tensor dst = sw_tensor_slice(&flat, at, 2, t * CAMPP_HEAD_CHANNELS, rows, 0);
            sw_transpose(&src, &dst, err);
        }
    }
    sw_tensor_free(&y);
    *x = flat;
    return err->code;
}

/* --- the TDNN part: rows (item, frame) ------------------------------------ */

/* taps of a conv over frames: out frame t of item b reads its frame
 * stride * t + (j - half) * dilation; in[] and out[] are the items' offsets */
static sw_status time_ids(sw_backend *be, int batch, const int64_t *in, const int64_t *out,
                          int taps, int stride, int dilation, sw_tensor *ids, sw_error *err)
{
    int64_t n = out[batch] * taps;
    int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
    for (int b = 0; id && b < batch; b++) {
        int64_t frames = LEN(in, b);
        for (int64_t t = 0; t < LEN(out, b); t++)
            for (int j = 0; j < taps; j++) {
                int64_t s = stride * t + (int64_t)(j - taps / 2) * dilation;
                *p++ = s < 0 || s >= frames ? -1 : (int32_t)(in[b] + s);
            }
    }
    return upload_ids(be, id, n, ids, err);
}

/* What every CAM layer of one forward shares. */
typedef struct dtdnn {
    const items *it;
    int64_t n;
    sw_tensor local_ids[2]; /* dilation 1 and 2 */
    sw_tensor pool;         /* per item [segments, frames]: frame weights of mean + segment mean */
    sw_tensor mask_ids;     /* (row, channel) -> its segment's sigmoid in the softmax pairs */
    sw_tensor buf;          /* [n * 32, 32]: each row's 1024 block features, 32 chunks of 32 */
    const sw_campp *model;  /* its chunk tables (chunk_tables) */
    sw_tensor tmp, h, y, ctx, ctx_h, logits, mask;
} dtdnn;

static void dtdnn_free(dtdnn *d)
{
    sw_tensor *all[] = {&d->local_ids[0], &d->local_ids[1], &d->pool,   &d->mask_ids,
                        &d->buf,          &d->tmp,          &d->h,      &d->y,
                        &d->ctx,          &d->ctx_h,        &d->logits, &d->mask};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
}

/* The rows of buf that hold chunks 0 .. k - 1 of every row, row by row, for
 * every k (a layer reads a prefix of every row and writes a chunk). They
 * depend on the row count alone, and the first n rows' ids of k chunks are
 * the first n * k of any longer table's: so the model keeps one table, for
 * m->chunk_rows rows, on the backend (freed with the weights), and a
 * forward of n rows slices it. It grows (to twice its rows, or n) when a
 * forward has more rows: an upload of 2,112 bytes a row once, instead of
 * every forward. */
static int64_t chunk_table_at(int64_t rows, int64_t k)
{
    return rows * k * (k - 1) / 2;
}

static sw_status chunk_tables(sw_campp *m, int64_t n, sw_error *err)
{
    if (n <= m->chunk_rows)
        return SW_OK;
    int64_t rows = n > 2 * m->chunk_rows ? n : 2 * m->chunk_rows;
    int64_t total = chunk_table_at(rows, CAMPP_CHUNKS + 1);
    if (rows * CAMPP_CHUNKS > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "CAM++: %lld rows are too many", (long long)n);
    int32_t *id = malloc((size_t)total * sizeof *id), *p = id;
    for (int64_t k = 1; id && k <= CAMPP_CHUNKS; k++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < k; c++)
                *p++ = (int32_t)(r * CAMPP_CHUNKS + c);
    sw_tensor_free(&m->chunk_ids);
    m->chunk_rows = 0;
    if (upload_ids(m->obj.be, id, total, &m->chunk_ids, err) == SW_OK)
        m->chunk_rows = rows;
    return err->code;
}

static sw_tensor chunk_ids(const dtdnn *d, int64_t chunks)
{
    const sw_campp *m = d->model;
    return sw_tensor_slice(&m->chunk_ids, chunk_table_at(m->chunk_rows, chunks), 1, d->n * chunks,
                           0, 0);
}

/* The context of a CAM layer is each channel's mean over the item plus its
 * mean over the segment of CAMPP_SEG_LEN frames the frame falls in (the last
 * segment may be shorter, and averages what it has). */
static sw_status dtdnn_init(sw_campp *m, dtdnn *d, sw_error *err)
{
    sw_backend *be = m->obj.be;
    d->model = m;
    const items *it = d->it;
    int64_t n = d->n, segs = it->soff[it->batch];
    float *pool = malloc((size_t)it->poff[it->batch] * sizeof *pool);
    if (!pool)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    for (int b = 0; b < it->batch; b++) {
        int64_t t = LEN(it->hoff, b), s = LEN(it->soff, b);
        float *pb = pool + it->poff[b];
        for (int64_t i = 0; i < s; i++) {
            int64_t first = i * CAMPP_SEG_LEN,
                    len = t - first < CAMPP_SEG_LEN ? t - first : CAMPP_SEG_LEN;
            for (int64_t f = 0; f < t; f++)
                pb[i * t + f] = (float)(1.0 / (double)t +
                                        (f >= first && f < first + len ? 1.0 / (double)len : 0));
        }
    }
    if (fresh(be, &d->pool, it->poff[it->batch], 1, err) == SW_OK)
        be->upload(be, d->pool.data, pool, sw_tensor_nbytes(&d->pool), err);
    free(pool);
    if (err->code != SW_OK)
        return err->code;
    int64_t nm = n * CAMPP_GROWTH;
    int32_t *id = malloc((size_t)nm * sizeof *id), *p = id;
    for (int b = 0; id && b < it->batch; b++)
        for (int64_t f = 0; f < LEN(it->hoff, b); f++) {
            int64_t seg = it->soff[b] + f / CAMPP_SEG_LEN;
            for (int j = 0; j < CAMPP_GROWTH; j++)
                *p++ = (int32_t)(seg * 2 * CAMPP_GROWTH + 2 * j);
        }
    if (upload_ids(be, id, nm, &d->mask_ids, err) != SW_OK)
        return err->code;
    for (int k = 0; k < 2; k++)
        if (time_ids(be, it->batch, it->hoff, it->hoff, 3, 1, k + 1, &d->local_ids[k], err) !=
            SW_OK)
            return err->code;
    if (chunk_tables(m, n, err) == SW_OK &&
        fresh(be, &d->buf, n * CAMPP_CHUNKS, CAMPP_GROWTH, err) == SW_OK &&
        fresh(be, &d->tmp, n, 2 * CAMPP_OUT_CHANNELS, err) == SW_OK &&
        fresh(be, &d->h, n, CAMPP_BN_CHANNELS, err) == SW_OK &&
        fresh(be, &d->y, n, CAMPP_GROWTH, err) == SW_OK &&
        fresh(be, &d->ctx, segs, CAMPP_BN_CHANNELS, err) == SW_OK &&
        fresh(be, &d->ctx_h, segs, CAMPP_CTX_CHANNELS, err) == SW_OK &&
        fresh(be, &d->logits, segs, 2 * CAMPP_GROWTH, err) == SW_OK)
        fresh(be, &d->mask, n, CAMPP_GROWTH, err);
    return err->code;
}

/* buf's channels from `first` * 32 of every row = x [n, chunks * 32]: the
 * table of chunks 0 .. chunks - 1 into buf seen from chunk `first` on */
static sw_status write_block(dtdnn *d, int64_t first, const sw_tensor *x, sw_error *err)
{
    int64_t chunks = sw_row_len(x) / CAMPP_GROWTH;
    sw_tensor src = sw_tensor_slice(x, 0, 2, d->n * chunks, CAMPP_GROWTH, 0);
    sw_tensor dst = sw_tensor_slice(&d->buf, first * CAMPP_GROWTH, 2, d->n * CAMPP_CHUNKS - first,
                                    CAMPP_GROWTH, 0);
    sw_tensor ids = chunk_ids(d, chunks);
    return sw_scatter_rows(&src, &ids, &dst, err);
}

/* tmp [n, c] = relu(norm(buf's first c channels)): row r's channels lie
 * together in buf, so one pass reads them in place */
static sw_status read_block(dtdnn *d, int64_t c, const campp_affine *norm, sw_tensor *x,
                            sw_error *err)
{
    *x = sw_tensor_slice(&d->tmp, 0, 2, d->n, c, 0);
    return sw_affine_relu_rows(&d->buf, CAMPP_CHUNKS * CAMPP_GROWTH, d->n, c, &norm->scale,
                               &norm->shift, x, err);
}

/* One CAM layer: appends its 32 channels to the block's features. */
static sw_status cam_layer(const campp_layer *l, dtdnn *d, sw_error *err)
{
    sw_tensor x;
    if (read_block(d, l->in_channels, &l->norm, &x, err) != SW_OK ||
        linear(&x, &l->bottle, 1, &d->h, err) != SW_OK)
        return err->code;
    /* y = the dilated local conv */
    if (conv_into(&d->h, &d->local_ids[l->dilation - 1], 3, &l->local, 0, &d->y, err) != SW_OK)
        return err->code;
    /* the mask from each segment's context */
    const items *it = d->it;
    for (int b = 0; b < it->batch; b++) {
        int64_t t = LEN(it->hoff, b), s = LEN(it->soff, b);
        sw_tensor pb = sw_tensor_slice(&d->pool, it->poff[b], 2, s, t, 0);
        sw_tensor hb =
            sw_tensor_slice(&d->h, it->hoff[b] * CAMPP_BN_CHANNELS, 2, t, CAMPP_BN_CHANNELS, 0);
        sw_tensor cb =
            sw_tensor_slice(&d->ctx, it->soff[b] * CAMPP_BN_CHANNELS, 2, s, CAMPP_BN_CHANNELS, 0);
        if (sw_matmul(&pb, &hb, &cb, 0, 1.0f, 0.0f, err) != SW_OK)
            return err->code;
    }
    int64_t segs = it->soff[it->batch];
    sw_tensor pairs = sw_tensor_slice(&d->logits, 0, 2, segs * CAMPP_GROWTH, 2, 0);
    sw_tensor singles = sw_tensor_slice(&d->logits, 0, 2, segs * 2 * CAMPP_GROWTH, 1, 0);
    sw_tensor mask = sw_tensor_slice(&d->mask, 0, 2, d->n * CAMPP_GROWTH, 1, 0);
    if (linear(&d->ctx, &l->ctx_in, 1, &d->ctx_h, err) == SW_OK &&
        linear(&d->ctx_h, &l->ctx_out, 0, &d->logits, err) == SW_OK &&
        sw_softmax(&pairs, &pairs, err) == SW_OK &&
        sw_gather_rows(&singles, &d->mask_ids, &mask, err) == SW_OK &&
        sw_mul(&d->y, &d->mask, &d->y, err) == SW_OK)
        write_block(d, l->in_channels / CAMPP_GROWTH, &d->y, err);
    return err->code;
}

/* The three dense blocks and their transitions: x [n, 128] in, out [n, 512]
 * (allocated here) after the last transition and out_nonlinear. */
static sw_status dtdnn_run(sw_campp *m, dtdnn *d, const sw_tensor *x, sw_tensor *out, sw_error *err)
{
    if (write_block(d, 0, x, err) != SW_OK)
        return err->code;
    int channels = CAMPP_INIT_CHANNELS, index = 0;
    for (int k = 0; k < CAMPP_BLOCKS && err->code == SW_OK; k++) {
        for (int i = 0; i < campp_block_layers[k] && err->code == SW_OK; i++)
            cam_layer(&m->layers[index++], d, err);
        channels += campp_block_layers[k] * CAMPP_GROWTH;
        int last = k == CAMPP_BLOCKS - 1;
        sw_tensor xin, y = {0};
        if (err->code != SW_OK || read_block(d, channels, &m->transit_norm[k], &xin, err) ||
            fresh(m->obj.be, &y, d->n, channels / 2, err) ||
            linear(&xin, &m->transit[k], last, &y, err)) {
            sw_tensor_free(&y);
            break;
        }
        channels /= 2;
        if (last) {
            *out = y;
        } else {
            write_block(d, 0, &y, err);
            sw_tensor_free(&y);
        }
    }
    return err->code;
}

/* From the 2-D front's output x [total, 320] (freed here) to the embeddings. */
static sw_status forward_rest(sw_campp *m, sw_tensor *x, const items *it, float *out, sw_error *err)
{
    sw_backend *be = m->obj.be;
    dtdnn d = {0};
    d.it = it;
    d.n = it->hoff[it->batch];
    sw_tensor ids = {0}, t1 = {0}, y = {0}, stats = {0}, emb = {0};
    if (time_ids(be, it->batch, it->off, it->hoff, CAMPP_TDNN_TAPS, 2, 1, &ids, err) == SW_OK &&
        conv(be, x, &ids, CAMPP_TDNN_TAPS, &m->tdnn, 1, &t1, err) == SW_OK) {
        sw_tensor_free(x);
        sw_tensor_free(&ids);
        /* mean and unbiased standard deviation over each item's frames
         * (summed in double), then the dense layer: only the embeddings
         * come back */
        if (dtdnn_init(m, &d, err) == SW_OK && dtdnn_run(m, &d, &t1, &y, err) == SW_OK &&
            fresh(be, &stats, it->batch, 2 * CAMPP_OUT_CHANNELS, err) == SW_OK) {
            for (int b = 0; b < it->batch && err->code == SW_OK; b++) {
                sw_tensor item = sw_tensor_slice(&y, it->hoff[b] * CAMPP_OUT_CHANNELS, 3, 1,
                                                 LEN(it->hoff, b), CAMPP_OUT_CHANNELS);
                sw_tensor row = sw_tensor_slice(&stats, (int64_t)b * 2 * CAMPP_OUT_CHANNELS, 2, 1,
                                                2 * CAMPP_OUT_CHANNELS, 0);
                sw_stats_pool(&item, NULL, 0.0, &row, err);
            }
            if (err->code == SW_OK &&
                fresh(be, &emb, it->batch, SW_CAMPP_EMBED_DIM, err) == SW_OK &&
                linear(&stats, &m->dense, 0, &emb, err) == SW_OK)
                be->download(be, out, emb.data, sw_tensor_nbytes(&emb), err);
        }
    }
    dtdnn_free(&d);
    sw_tensor_free(&ids);
    sw_tensor_free(&t1);
    sw_tensor_free(&y);
    sw_tensor_free(&stats);
    sw_tensor_free(&emb);
    sw_tensor_free(x);
    return err->code;
}

static sw_status forward(sw_campp *m, sw_tensor *x, const items *it, float *out, sw_error *err)
{
    if (head(m, x, it, err) != SW_OK)
        return err->code;
    return forward_rest(m, x, it, out, err);
}

/* lengths[b] >= SW_CAMPP_MIN_FRAMES and the gathers' int32 row ids (9 taps of
 * every (frequency row, frame)) in range; *total their sum */
static sw_status check_lengths(const int64_t *lengths, int batch, int64_t *total, sw_error *err)
{
    *total = 0;
    for (int b = 0; b < batch; b++) {
        if (lengths[b] < SW_CAMPP_MIN_FRAMES)
            return sw_fail(err, SW_ERR_ARG, "CAM++: %lld frames are too few (at least %d)",
                           (long long)lengths[b], SW_CAMPP_MIN_FRAMES);
        if (lengths[b] > INT32_MAX / (SW_CAMPP_FEAT_DIM * 9) - *total)
            return sw_fail(err, SW_ERR_ARG, "CAM++: a batch of %d items is too large", batch);
        *total += lengths[b];
    }
    return SW_OK;
}

sw_status sw_campp_front(sw_campp *m, const float *features, int64_t frames, float *out,
                         sw_error *err)
{
    if (!m || !features || !out || frames < 1)
        return sw_fail(err, SW_ERR_ARG, "CAM++: model, features, frames and out needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    int64_t total;
    if (check_lengths(&frames, 1, &total, err) != SW_OK)
        return err->code;
    items it = {0};
    sw_tensor x = {0};
    if (items_init(&it, &frames, 1, err) == SW_OK &&
        fresh(m->obj.be, &x, frames, SW_CAMPP_FEAT_DIM, err) == SW_OK &&
        m->obj.be->upload(m->obj.be, x.data, features, sw_tensor_nbytes(&x), err) == SW_OK &&
        head(m, &x, &it, err) == SW_OK)
        m->obj.be->download(m->obj.be, out, x.data, sw_tensor_nbytes(&x), err);
    sw_tensor_free(&x);
    items_free(&it);
    return err->code;
}

sw_status campp_run_device(sw_campp *m, sw_tensor *x, const int64_t *lengths, int batch, float *out,
                           sw_error *err)
{
    int64_t total;
    items it = {0};
    if (check_lengths(lengths, batch, &total, err) == SW_OK &&
        items_init(&it, lengths, batch, err) == SW_OK)
        forward(m, x, &it, out, err);
    sw_tensor_free(x);
    items_free(&it);
    return err->code;
}

/* Items of any lengths packed in one call: `rows` [sum of lengths, dim]
 * from the host, then `pass` (the whole network, or what follows the front). */
typedef sw_status (*campp_pass)(sw_campp *m, sw_tensor *x, const items *it, float *out,
                                sw_error *err);

static sw_status run_packed(sw_campp *m, const float *rows, int64_t dim, campp_pass pass,
                            const int64_t *lengths, int batch, float *out, sw_error *err)
{
    if (!m || !rows || !lengths || !out || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "CAM++: model, input rows, lengths and out needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    int64_t total;
    if (check_lengths(lengths, batch, &total, err) != SW_OK)
        return err->code;
    items it = {0};
    sw_tensor x = {0};
    if (items_init(&it, lengths, batch, err) == SW_OK &&
        fresh(m->obj.be, &x, total, dim, err) == SW_OK &&
        m->obj.be->upload(m->obj.be, x.data, rows, sw_tensor_nbytes(&x), err) == SW_OK)
        pass(m, &x, &it, out, err);
    sw_tensor_free(&x);
    items_free(&it);
    return err->code;
}

sw_status sw_campp_run_front_items(sw_campp *m, const float *front, const int64_t *lengths,
                                   int batch, float *out, sw_error *err)
{
    return run_packed(m, front, SW_CAMPP_FRONT_DIM, forward_rest, lengths, batch, out, err);
}

sw_status sw_campp_run_items(sw_campp *m, const float *features, const int64_t *lengths, int batch,
                             float *out, sw_error *err)
{
    return run_packed(m, features, SW_CAMPP_FEAT_DIM, forward, lengths, batch, out, err);
}

sw_status sw_campp_run(sw_campp *m, const float *features, int batch, int64_t frames, float *out,
                       sw_error *err)
{
    if (!m || !features || !out || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "CAM++: model, features and out needed");
    if (frames < SW_CAMPP_MIN_FRAMES)
        return sw_fail(err, SW_ERR_ARG, "CAM++: %lld frames are too few (at least %d)",
                       (long long)frames, SW_CAMPP_MIN_FRAMES);
    if ((int64_t)batch * frames * SW_CAMPP_FEAT_DIM * 9 > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "CAM++: a batch of %d x %lld frames is too large", batch,
                       (long long)frames);
    int64_t *lengths = malloc((size_t)batch * sizeof *lengths);
    if (!lengths)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    for (int b = 0; b < batch; b++)
        lengths[b] = frames;
    sw_campp_run_items(m, features, lengths, batch, out, err);
    free(lengths);
    return err->code;
}
