/* The CAM++ forward. Activations are rows of channels: the 2-D front keeps
 * one row per (item, frequency row, frame), the TDNN part one per (item,
 * frame). Every convolution is a gather of its input rows (the ids say which
 * row each tap reads; an id out of range reads zeros, which is the zero
 * padding) followed by one matrix product with tap-major weights.
 *
 * A dense block keeps its growing feature map channel-major, [channels,
 * rows], so that each layer's 32 new channels are appended contiguously; a
 * layer reads the first c channels back time-major with one transpose. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "campp_internal.h"

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

/* y [n, out] = x [n, in] w^T + b, then ReLU when asked */
static sw_status linear(const sw_tensor *x, const campp_linear *l, int relu, sw_tensor *y,
                        sw_error *err)
{
    if (sw_matmul(x, &l->w, y, 1, 1.0f, 0.0f, err) == SW_OK && l->b.data)
        sw_add(y, &l->b, y, err);
    if (err->code == SW_OK && relu)
        sw_leaky_relu(y, 0.0f, y, err);
    return err->code;
}

/* y [n_out, C_out] = a convolution of x (rows of C_in) whose taps `ids`
 * [n_out * taps] name. *y is allocated here. */
static sw_status conv(sw_backend *be, const sw_tensor *x, const sw_tensor *ids, int taps,
                      const campp_linear *l, int relu, sw_tensor *y, sw_error *err)
{
    int64_t c_in = sw_row_len(x), n_out = sw_tensor_numel(ids) / taps;
    sw_tensor table = sw_tensor_slice(x, 0, 2, sw_rows(x), c_in, 0), cols = {0};
    if (fresh(be, &cols, n_out * taps, c_in, err) == SW_OK &&
        sw_gather_rows(&table, ids, &cols, err) == SW_OK &&
        fresh(be, y, n_out, l->w.shape[0], err) == SW_OK) {
        sw_tensor wide = sw_tensor_slice(&cols, 0, 2, n_out, taps * c_in, 0);
        linear(&wide, l, relu, y, err);
    }
    sw_tensor_free(&cols);
    return err->code;
}

/* --- the 2-D front: rows (item, frequency row, frame) ---------------------- */

/* 3x3 taps, padding 1, stride `stride` along frequency only */
static sw_status conv2d_ids(sw_backend *be, int64_t batch, int64_t rows, int64_t frames, int stride,
                            sw_tensor *ids, sw_error *err)
{
    int64_t rows_out = (rows - 1) / stride + 1, n = batch * rows_out * frames * 9;
    int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
    for (int64_t b = 0; id && b < batch; b++)
        for (int64_t fo = 0; fo < rows_out; fo++)
            for (int64_t t = 0; t < frames; t++)
                for (int df = 0; df < 3; df++)
                    for (int dt = 0; dt < 3; dt++) {
                        int64_t f = fo * stride + df - 1, s = t + dt - 1;
                        *p++ = f < 0 || f >= rows || s < 0 || s >= frames
                                   ? -1
                                   : (int32_t)((b * rows + f) * frames + s);
                    }
    return upload_ids(be, id, n, ids, err);
}

static sw_status conv2d(sw_campp *m, const sw_tensor *x, int64_t batch, int64_t rows,
                        int64_t frames, int stride, const campp_linear *l, int relu, sw_tensor *y,
                        sw_error *err)
{
    sw_tensor ids = {0};
    if (conv2d_ids(m->be, batch, rows, frames, stride, &ids, err) == SW_OK)
        conv(m->be, x, &ids, 9, l, relu, y, err);
    sw_tensor_free(&ids);
    return err->code;
}

/* BasicResBlock: relu(conv2(relu(conv1 x)) + shortcut x). *x is replaced. */
static sw_status res_block(sw_campp *m, int i, sw_tensor *x, int64_t batch, int64_t *rows,
                           int64_t frames, sw_error *err)
{
    int stride = i % 2 == 0 ? 2 : 1;
    int64_t rows_out = (*rows - 1) / stride + 1;
    sw_tensor a = {0}, y = {0}, ids = {0}, shortcut = {0};
    if (conv2d(m, x, batch, *rows, frames, stride, &m->res[i][0], 1, &a, err) == SW_OK &&
        conv2d(m, &a, batch, rows_out, frames, 1, &m->res[i][1], 0, &y, err) == SW_OK) {
        if (stride == 1) {
            sw_add(&y, x, &y, err);
        } else { /* a 1x1 conv on every other row */
            int64_t n = batch * rows_out * frames;
            int32_t *id = malloc((size_t)n * sizeof *id);
            for (int64_t r = 0; id && r < n; r++) {
                int64_t b = r / (rows_out * frames), fo = r / frames % rows_out, t = r % frames;
                id[r] = (int32_t)((b * *rows + 2 * fo) * frames + t);
            }
            if (upload_ids(m->be, id, n, &ids, err) == SW_OK &&
                conv(m->be, x, &ids, 1, &m->res_short[i / 2], 0, &shortcut, err) == SW_OK)
                sw_add(&y, &shortcut, &y, err);
        }
        if (err->code == SW_OK)
            sw_leaky_relu(&y, 0.0f, &y, err);
    }
    sw_tensor_free(&a);
    sw_tensor_free(&ids);
    sw_tensor_free(&shortcut);
    sw_tensor_free(x);
    *x = y;
    *rows = rows_out;
    return err->code;
}

/* features [B, T, 80] (on the backend) -> [B * T, 320], channel c * 10 + row f
 * as CAMPPlus flattens (channels, rows). *x is replaced. */
static sw_status head(sw_campp *m, sw_tensor *x, int64_t batch, int64_t frames, sw_error *err)
{
    sw_backend *be = m->be;
    int64_t rows = SW_CAMPP_FEAT_DIM;
    sw_tensor by_row = {0}, y = {0};
    int64_t shape[3] = {batch, rows, frames};
    if (sw_tensor_new(be, SW_F32, 3, shape, &by_row, err) == SW_OK &&
        sw_transpose(x, &by_row, err) == SW_OK) {
        sw_tensor_free(x);
        sw_tensor col = sw_tensor_slice(&by_row, 0, 2, batch * rows * frames, 1, 0);
        conv2d(m, &col, batch, rows, frames, 1, &m->head_conv1, 1, &y, err);
    }
    sw_tensor_free(&by_row);
    sw_tensor_free(x);
    *x = y;
    for (int i = 0; i < CAMPP_RES_BLOCKS && err->code == SW_OK; i++)
        res_block(m, i, x, batch, &rows, frames, err);
    memset(&y, 0, sizeof y);
    if (err->code == SW_OK)
        conv2d(m, x, batch, rows, frames, 2, &m->head_conv2, 1, &y, err);
    sw_tensor_free(x);
    rows = (rows - 1) / 2 + 1;
    sw_tensor flat = {0};
    if (err->code == SW_OK) {
        int64_t s[3] = {batch, frames * CAMPP_HEAD_CHANNELS, rows};
        sw_tensor src = sw_tensor_slice(&y, 0, 3, batch, rows, frames * CAMPP_HEAD_CHANNELS);
        if (sw_tensor_new(be, SW_F32, 3, s, &flat, err) == SW_OK)
            sw_transpose(&src, &flat, err);
    }
    sw_tensor_free(&y);
    *x = sw_tensor_slice(&flat, 0, 2, batch * frames, CAMPP_HEAD_CHANNELS * rows, 0);
    return err->code;
}

/* --- the TDNN part: rows (item, frame) ------------------------------------ */

/* taps of a conv over frames: out frame t reads stride * t + (j - half) * dilation */
static sw_status time_ids(sw_backend *be, int64_t batch, int64_t frames, int64_t frames_out,
                          int taps, int stride, int dilation, sw_tensor *ids, sw_error *err)
{
    int64_t n = batch * frames_out * taps;
    int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
    for (int64_t b = 0; id && b < batch; b++)
        for (int64_t t = 0; t < frames_out; t++)
            for (int j = 0; j < taps; j++) {
                int64_t s = stride * t + (int64_t)(j - taps / 2) * dilation;
                *p++ = s < 0 || s >= frames ? -1 : (int32_t)(b * frames + s);
            }
    return upload_ids(be, id, n, ids, err);
}

/* What every CAM layer of one forward shares. */
typedef struct dtdnn {
    int64_t batch, frames, n, segments;
    sw_tensor local_ids[2]; /* dilation 1 and 2 */
    sw_tensor pool;         /* [segments, frames]: frame weights of mean + segment mean */
    sw_tensor mask_ids;     /* (row, channel) -> its segment's sigmoid in the softmax pairs */
    sw_tensor buf;          /* [1024, n] channel-major block features */
    sw_tensor tmp, h, cols, y, ctx, ctx_h, logits, mask;
} dtdnn;

static void dtdnn_free(dtdnn *d)
{
    sw_tensor *all[] = {&d->local_ids[0],
                        &d->local_ids[1],
                        &d->pool,
                        &d->mask_ids,
                        &d->buf,
                        &d->tmp,
                        &d->h,
                        &d->cols,
                        &d->y,
                        &d->ctx,
                        &d->ctx_h,
                        &d->logits,
                        &d->mask};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_tensor_free(all[i]);
}

/* The context of a CAM layer is each channel's mean over the item plus its
 * mean over the segment of CAMPP_SEG_LEN frames the frame falls in (the last
 * segment may be shorter, and averages what it has). */
static sw_status dtdnn_init(sw_backend *be, dtdnn *d, sw_error *err)
{
    int64_t t = d->frames, s = d->segments, n = d->n;
    float *pool = malloc((size_t)(s * t) * sizeof *pool);
    if (!pool)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    for (int64_t i = 0; i < s; i++) {
        int64_t first = i * CAMPP_SEG_LEN,
                len = t - first < CAMPP_SEG_LEN ? t - first : CAMPP_SEG_LEN;
        for (int64_t f = 0; f < t; f++)
            pool[i * t + f] =
                (float)(1.0 / (double)t + (f >= first && f < first + len ? 1.0 / (double)len : 0));
    }
    if (fresh(be, &d->pool, s, t, err) == SW_OK)
        be->upload(be, d->pool.data, pool, sw_tensor_nbytes(&d->pool), err);
    free(pool);
    if (err->code != SW_OK)
        return err->code;
    int64_t nm = n * CAMPP_GROWTH;
    int32_t *id = malloc((size_t)nm * sizeof *id);
    for (int64_t r = 0; id && r < n; r++) {
        int64_t b = r / t, seg = r % t / CAMPP_SEG_LEN;
        for (int j = 0; j < CAMPP_GROWTH; j++)
            id[r * CAMPP_GROWTH + j] = (int32_t)((b * s + seg) * 2 * CAMPP_GROWTH + 2 * j);
    }
    if (upload_ids(be, id, nm, &d->mask_ids, err) != SW_OK)
        return err->code;
    for (int k = 0; k < 2; k++)
        if (time_ids(be, d->batch, t, t, 3, 1, k + 1, &d->local_ids[k], err) != SW_OK)
            return err->code;
    int64_t segs = d->batch * s;
    if (fresh(be, &d->buf, 2 * CAMPP_OUT_CHANNELS, n, err) == SW_OK &&
        fresh(be, &d->tmp, n, 2 * CAMPP_OUT_CHANNELS, err) == SW_OK &&
        fresh(be, &d->h, n, CAMPP_BN_CHANNELS, err) == SW_OK &&
        fresh(be, &d->cols, 3 * n, CAMPP_BN_CHANNELS, err) == SW_OK &&
        fresh(be, &d->y, n, CAMPP_GROWTH, err) == SW_OK &&
        fresh(be, &d->ctx, segs, CAMPP_BN_CHANNELS, err) == SW_OK &&
        fresh(be, &d->ctx_h, segs, CAMPP_CTX_CHANNELS, err) == SW_OK &&
        fresh(be, &d->logits, segs, 2 * CAMPP_GROWTH, err) == SW_OK)
        fresh(be, &d->mask, n, CAMPP_GROWTH, err);
    return err->code;
}

/* tmp [n, c] = relu(norm(buf's first c channels, read time-major)) */
static sw_status read_block(dtdnn *d, int64_t c, const campp_affine *norm, sw_tensor *x,
                            sw_error *err)
{
    sw_tensor src = sw_tensor_slice(&d->buf, 0, 2, c, d->n, 0);
    *x = sw_tensor_slice(&d->tmp, 0, 2, d->n, c, 0);
    if (sw_transpose(&src, x, err) == SW_OK && sw_mul(x, &norm->scale, x, err) == SW_OK &&
        sw_add(x, &norm->shift, x, err) == SW_OK)
        sw_leaky_relu(x, 0.0f, x, err);
    return err->code;
}

/* One CAM layer: appends its 32 channels to the block's features. */
static sw_status cam_layer(const campp_layer *l, dtdnn *d, sw_error *err)
{
    sw_tensor x;
    if (read_block(d, l->in_channels, &l->norm, &x, err) != SW_OK ||
        linear(&x, &l->bottle, 1, &d->h, err) != SW_OK)
        return err->code;
    /* y = the dilated local conv */
    const sw_tensor *ids = &d->local_ids[l->dilation - 1];
    sw_tensor wide = sw_tensor_slice(&d->cols, 0, 2, d->n, 3 * CAMPP_BN_CHANNELS, 0);
    if (sw_gather_rows(&d->h, ids, &d->cols, err) != SW_OK ||
        linear(&wide, &l->local, 0, &d->y, err) != SW_OK)
        return err->code;
    /* the mask from each segment's context */
    int64_t t = d->frames, s = d->segments;
    for (int64_t b = 0; b < d->batch; b++) {
        sw_tensor hb =
            sw_tensor_slice(&d->h, b * t * CAMPP_BN_CHANNELS, 2, t, CAMPP_BN_CHANNELS, 0);
        sw_tensor cb =
            sw_tensor_slice(&d->ctx, b * s * CAMPP_BN_CHANNELS, 2, s, CAMPP_BN_CHANNELS, 0);
        if (sw_matmul(&d->pool, &hb, &cb, 0, 1.0f, 0.0f, err) != SW_OK)
            return err->code;
    }
    sw_tensor pairs = sw_tensor_slice(&d->logits, 0, 2, d->batch * s * CAMPP_GROWTH, 2, 0);
    sw_tensor singles = sw_tensor_slice(&d->logits, 0, 2, d->batch * s * 2 * CAMPP_GROWTH, 1, 0);
    sw_tensor mask = sw_tensor_slice(&d->mask, 0, 2, d->n * CAMPP_GROWTH, 1, 0);
    sw_tensor dst = sw_tensor_slice(&d->buf, l->in_channels * d->n, 2, CAMPP_GROWTH, d->n, 0);
    if (linear(&d->ctx, &l->ctx_in, 1, &d->ctx_h, err) == SW_OK &&
        linear(&d->ctx_h, &l->ctx_out, 0, &d->logits, err) == SW_OK &&
        sw_softmax(&pairs, &pairs, err) == SW_OK &&
        sw_gather_rows(&singles, &d->mask_ids, &mask, err) == SW_OK &&
        sw_mul(&d->y, &d->mask, &d->y, err) == SW_OK)
        sw_transpose(&d->y, &dst, err);
    return err->code;
}

/* The three dense blocks and their transitions: x [n, 128] in, out [n, 512]
 * (allocated here) after the last transition and out_nonlinear. */
static sw_status dtdnn_run(sw_campp *m, dtdnn *d, const sw_tensor *x, sw_tensor *out, sw_error *err)
{
    sw_tensor first = sw_tensor_slice(&d->buf, 0, 2, CAMPP_INIT_CHANNELS, d->n, 0);
    if (sw_transpose(x, &first, err) != SW_OK)
        return err->code;
    int channels = CAMPP_INIT_CHANNELS, index = 0;
    for (int k = 0; k < CAMPP_BLOCKS && err->code == SW_OK; k++) {
        for (int i = 0; i < campp_block_layers[k] && err->code == SW_OK; i++)
            cam_layer(&m->layers[index++], d, err);
        channels += campp_block_layers[k] * CAMPP_GROWTH;
        int last = k == CAMPP_BLOCKS - 1;
        sw_tensor xin, y = {0};
        if (err->code != SW_OK || read_block(d, channels, &m->transit_norm[k], &xin, err) ||
            fresh(m->be, &y, d->n, channels / 2, err) ||
            linear(&xin, &m->transit[k], last, &y, err)) {
            sw_tensor_free(&y);
            break;
        }
        channels /= 2;
        if (last) {
            *out = y;
        } else {
            sw_tensor dst = sw_tensor_slice(&d->buf, 0, 2, channels, d->n, 0);
            sw_transpose(&y, &dst, err);
            sw_tensor_free(&y);
        }
    }
    return err->code;
}

static sw_status forward(sw_campp *m, sw_tensor *x, int64_t batch, int64_t frames, float *out,
                         sw_error *err)
{
    sw_backend *be = m->be;
    if (head(m, x, batch, frames, err) != SW_OK)
        return err->code;
    dtdnn d = {0};
    d.batch = batch;
    d.frames = (frames - 1) / 2 + 1;
    d.n = batch * d.frames;
    d.segments = (d.frames + CAMPP_SEG_LEN - 1) / CAMPP_SEG_LEN;
    sw_tensor ids = {0}, t1 = {0}, y = {0}, stats = {0}, emb = {0};
    if (time_ids(be, batch, frames, d.frames, CAMPP_TDNN_TAPS, 2, 1, &ids, err) == SW_OK &&
        conv(be, x, &ids, CAMPP_TDNN_TAPS, &m->tdnn, 1, &t1, err) == SW_OK) {
        sw_tensor_free(x);
        sw_tensor_free(&ids);
        /* mean and unbiased standard deviation over each item's frames
         * (summed in double), then the dense layer: only the embeddings
         * come back */
        if (dtdnn_init(be, &d, err) == SW_OK && dtdnn_run(m, &d, &t1, &y, err) == SW_OK) {
            sw_tensor items = sw_tensor_slice(&y, 0, 3, batch, d.frames, CAMPP_OUT_CHANNELS);
            if (fresh(be, &stats, batch, 2 * CAMPP_OUT_CHANNELS, err) == SW_OK &&
                sw_stats_pool(&items, NULL, 0.0, &stats, err) == SW_OK &&
                fresh(be, &emb, batch, SW_CAMPP_EMBED_DIM, err) == SW_OK &&
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

sw_status sw_campp_run(sw_campp *m, const float *features, int batch, int64_t frames, float *out,
                       sw_error *err)
{
    if (!m || !features || !out || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "CAM++: model, features and out needed");
    if (m->backend_lost)
        return sw_fail(err, SW_ERR_DEVICE, "CAM++: the backend was closed");
    if (frames < SW_CAMPP_MIN_FRAMES)
        return sw_fail(err, SW_ERR_ARG, "CAM++: %lld frames are too few (at least %d)",
                       (long long)frames, SW_CAMPP_MIN_FRAMES);
    if ((int64_t)batch * frames * SW_CAMPP_FEAT_DIM * 9 > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "CAM++: a batch of %d x %lld frames is too large", batch,
                       (long long)frames);
    sw_tensor x = {0};
    int64_t shape[3] = {batch, frames, SW_CAMPP_FEAT_DIM};
    if (sw_tensor_new(m->be, SW_F32, 3, shape, &x, err) != SW_OK)
        return err->code;
    if (m->be->upload(m->be, x.data, features, sw_tensor_nbytes(&x), err) == SW_OK)
        forward(m, &x, batch, frames, out, err);
    sw_tensor_free(&x);
    return err->code;
}
