/* The ResNet34 forward. An activation is a matrix of rows (item, frequency
 * row, frame) by channels. A 3x3 convolution gathers, for every output row
 * and frame, the three input frequency rows it reads (an id out of range
 * reads zeros: the zero padding) side by side as 3 * C channels, and runs one
 * 1-D convolution over time with the rearranged kernel; a 1x1 shortcut
 * gathers every other row and frame and is one matrix product. The pooling
 * (stats_pool, summed in double) and the last linear layer run on the
 * backend too: a forward copies its features, masks and index tables up and
 * only the embeddings down. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "resnet34_internal.h"

/* Host ids -> an int32 tensor on the backend; `host` is freed here. */
static sw_status upload_ids(sw_backend *be, int32_t *host, int64_t n, sw_tensor *t, sw_error *err)
{
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "ResNet34: out of host memory");
    int64_t shape[1] = {n};
    if (sw_tensor_new(be, SW_I32, 1, shape, t, err) == SW_OK)
        be->upload(be, t->data, host, (size_t)n * sizeof *host, err);
    free(host);
    return err->code;
}

/* The shape of one activation: rows (batch, rows, frames). */
typedef struct grid {
    int64_t batch, rows, frames;
} grid;

static int64_t halve(int64_t n, int stride)
{
    return (n - 1) / stride + 1;
}

/* Taps of a 3x3 convolution with `stride` along frequency: for every (item,
 * output row, input frame) the three rows f = fo * stride - 1 .. + 1. */
static sw_status row_ids(sw_backend *be, grid g, int stride, sw_tensor *ids, sw_error *err)
{
    int64_t rows_out = halve(g.rows, stride), n = g.batch * rows_out * g.frames * 3;
    int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
    for (int64_t b = 0; id && b < g.batch; b++)
        for (int64_t fo = 0; fo < rows_out; fo++)
            for (int64_t t = 0; t < g.frames; t++)
                for (int df = 0; df < 3; df++) {
                    int64_t f = fo * stride + df - 1;
                    *p++ = f < 0 || f >= g.rows ? -1 : (int32_t)((b * g.rows + f) * g.frames + t);
                }
    return upload_ids(be, id, n, ids, err);
}

/* x [rows of g, c_in] -> *y [rows of the output grid, c_out]; ReLU when asked. */
static sw_status conv3(sw_backend *be, const sw_tensor *x, grid g, const sw_tensor *ids, int stride,
                       const resnet_conv *cv, int relu, sw_tensor *y, sw_error *err)
{
    int64_t rows_out = halve(g.rows, stride), frames_out = halve(g.frames, stride);
    int64_t c = cv->c_in;
    sw_tensor table = sw_tensor_slice(x, 0, 2, g.batch * g.rows * g.frames, c, 0), cols = {0};
    int64_t cols_shape[2] = {sw_tensor_numel(ids), c};
    int64_t y_shape[3] = {g.batch * rows_out, frames_out, cv->c_out};
    if (sw_tensor_new(be, SW_F32, 2, cols_shape, &cols, err) == SW_OK &&
        sw_gather_rows(&table, ids, &cols, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 3, y_shape, y, err) == SW_OK) {
        sw_tensor wide = sw_tensor_slice(&cols, 0, 3, g.batch * rows_out, g.frames, 3 * c);
        if (sw_conv1d(&wide, &cv->w, &cv->b, stride, 1, y, err) == SW_OK && relu)
            sw_leaky_relu(y, 0.0f, y, err);
    }
    sw_tensor_free(&cols);
    return err->code;
}

/* The 1x1 shortcut of a block that halves both axes: every other row and
 * frame, then one product. */
static sw_status shortcut(sw_backend *be, const sw_tensor *x, grid g, const resnet_block *blk,
                          sw_tensor *y, sw_error *err)
{
    int s = blk->stride;
    int64_t rows_out = halve(g.rows, s), frames_out = halve(g.frames, s);
    int64_t n = g.batch * rows_out * frames_out, c_in = blk->short_w.shape[1];
    int32_t *id = malloc((size_t)n * sizeof *id), *p = id;
    for (int64_t b = 0; id && b < g.batch; b++)
        for (int64_t fo = 0; fo < rows_out; fo++)
            for (int64_t t = 0; t < frames_out; t++)
                *p++ = (int32_t)((b * g.rows + fo * s) * g.frames + t * s);
    sw_tensor ids = {0}, picked = {0};
    sw_tensor table = sw_tensor_slice(x, 0, 2, g.batch * g.rows * g.frames, c_in, 0);
    int64_t picked_shape[2] = {n, c_in}, y_shape[2] = {n, blk->short_w.shape[0]};
    if (upload_ids(be, id, n, &ids, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, picked_shape, &picked, err) == SW_OK &&
        sw_gather_rows(&table, &ids, &picked, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, y_shape, y, err) == SW_OK &&
        sw_matmul(&picked, &blk->short_w, y, 1, 1.0f, 0.0f, err) == SW_OK)
        sw_add(y, &blk->short_b, y, err);
    sw_tensor_free(&ids);
    sw_tensor_free(&picked);
    return err->code;
}

/* The stride-1 taps of the grid a stage runs on, made once per stage. */
typedef struct stage_ids {
    grid g;
    sw_tensor ids;
} stage_ids;

static const sw_tensor *same_ids(sw_backend *be, stage_ids *cache, grid g, sw_error *err)
{
    if (!cache->ids.data || cache->g.rows != g.rows || cache->g.frames != g.frames) {
        sw_tensor_free(&cache->ids);
        cache->g = g;
        row_ids(be, g, 1, &cache->ids, err);
    }
    return &cache->ids;
}

/* relu(conv2(relu(conv1 x)) + shortcut x); *x and *g are replaced. */
static sw_status block(sw_resnet34 *m, const resnet_block *blk, stage_ids *cache, sw_tensor *x,
                       grid *g, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int s = blk->stride;
    grid out = {g->batch, halve(g->rows, s), halve(g->frames, s)};
    sw_tensor a = {0}, y = {0}, strided = {0}, side = {0};
    const sw_tensor *ids1 = NULL;
    if (s == 1)
        ids1 = same_ids(be, cache, *g, err);
    else if (row_ids(be, *g, s, &strided, err) == SW_OK)
        ids1 = &strided;
    if (err->code == SW_OK && conv3(be, x, *g, ids1, s, &blk->conv1, 1, &a, err) == SW_OK &&
        conv3(be, &a, out, same_ids(be, cache, out, err), 1, &blk->conv2, 0, &y, err) == SW_OK) {
        int64_t n = out.batch * out.rows * out.frames, c = blk->conv2.c_out;
        sw_tensor y2 = sw_tensor_slice(&y, 0, 2, n, c, 0), x2 = sw_tensor_slice(x, 0, 2, n, c, 0);
        if (blk->short_w.data) {
            if (shortcut(be, x, *g, blk, &side, err) == SW_OK)
                sw_add(&y2, &side, &y2, err);
        } else {
            sw_add(&y2, &x2, &y2, err);
        }
        if (err->code == SW_OK)
            sw_leaky_relu(&y2, 0.0f, &y2, err);
    }
    sw_tensor_free(&a);
    sw_tensor_free(&strided);
    sw_tensor_free(&side);
    sw_tensor_free(x);
    *x = y;
    *g = out;
    return err->code;
}

/* The masks [batch, n_masks, mask_frames] resampled to the last stage's
 * frames (torch's "nearest") and uploaded: the pooling's frame weights. */
static sw_status frame_weights(sw_backend *be, const float *masks, int batch, int n_masks,
                               int64_t mask_frames, int64_t frames, sw_tensor *w, sw_error *err)
{
    int64_t n = (int64_t)batch * n_masks;
    float *host = malloc((size_t)(n * frames) * sizeof *host);
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "ResNet34: out of host memory");
    for (int64_t i = 0; i < n; i++)
        for (int64_t t = 0; t < frames; t++) {
            int64_t src = t * mask_frames / frames;
            host[i * frames + t] =
                masks[i * mask_frames + (src < mask_frames ? src : mask_frames - 1)];
        }
    int64_t shape[3] = {batch, n_masks, frames};
    if (sw_tensor_new(be, SW_F32, 3, shape, w, err) == SW_OK)
        be->upload(be, w->data, host, sw_tensor_nbytes(w), err);
    free(host);
    return err->code;
}

static sw_status forward(sw_resnet34 *m, sw_tensor *x, int batch, int64_t frames,
                         const float *masks, int n_masks, int64_t mask_frames, float *out,
                         sw_error *err)
{
    sw_backend *be = m->obj.be;
    grid g = {batch, SW_RESNET34_FEAT_DIM, frames};
    stage_ids cache = {{0, 0, 0}, {0}};
    sw_tensor by_row = {0}, y = {0};
    int64_t shape[3] = {batch, SW_RESNET34_FEAT_DIM, frames};
    if (sw_tensor_new(be, SW_F32, 3, shape, &by_row, err) == SW_OK &&
        sw_transpose(x, &by_row, err) == SW_OK &&
        conv3(be, &by_row, g, same_ids(be, &cache, g, err), 1, &m->conv1, 1, &y, err) == SW_OK) {
        sw_tensor_free(&by_row);
        for (int i = 0; i < RESNET_BLOCKS && err->code == SW_OK; i++)
            block(m, &m->blocks[i], &cache, &y, &g, err);
    }
    sw_tensor_free(&by_row);
    sw_tensor_free(&cache.ids);
    /* the statistics pooling (mean and standard deviation over time per
     * mask, summed in double) and the last linear layer, on the device */
    const int64_t c = SW_RESNET34_EMBED_DIM;
    int64_t n_out = (int64_t)batch * n_masks;
    int64_t s_shape[2] = {n_out, RESNET_STATS}, e_shape[2] = {n_out, c};
    sw_tensor weights = {0}, stats = {0}, emb = {0};
    sw_tensor last = sw_tensor_slice(&y, 0, 3, (int64_t)batch * g.rows, g.frames, c);
    last.ndim = 4; /* [batch, rows, frames, c]: each row is a group of the pooling */
    last.shape[0] = batch;
    last.shape[1] = g.rows;
    last.shape[2] = g.frames;
    last.shape[3] = c;
    if (err->code == SW_OK && masks)
        frame_weights(be, masks, batch, n_masks, mask_frames, g.frames, &weights, err);
    if (err->code == SW_OK && sw_tensor_new(be, SW_F32, 2, s_shape, &stats, err) == SW_OK &&
        sw_stats_pool(&last, masks ? &weights : NULL, RESNET_STD_EPS, &stats, err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 2, e_shape, &emb, err) == SW_OK &&
        sw_matmul(&stats, &m->seg_w, &emb, 1, 1.0f, 0.0f, err) == SW_OK &&
        sw_add(&emb, &m->seg_b, &emb, err) == SW_OK)
        be->download(be, out, emb.data, (size_t)(n_out * c) * sizeof *out, err);
    sw_tensor_free(&y);
    sw_tensor_free(&weights);
    sw_tensor_free(&stats);
    sw_tensor_free(&emb);
    return err->code;
}

sw_status sw_resnet34_run(sw_resnet34 *m, const float *features, int batch, int64_t frames,
                          const float *masks, int n_masks, int64_t mask_frames, float *out,
                          sw_error *err)
{
    if (!m || !features || !out || batch < 1 || n_masks < 1)
        return sw_fail(err, SW_ERR_ARG, "ResNet34: model, features and out needed");
    if (!masks && n_masks != 1)
        return sw_fail(err, SW_ERR_ARG, "ResNet34: without masks there is one embedding per item");
    if (masks && mask_frames < 1)
        return sw_fail(err, SW_ERR_ARG, "ResNet34: masks need at least one frame");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    if (frames < 1)
        return sw_fail(err, SW_ERR_ARG, "ResNet34: no fbank frames");
    /* the gathers index rows with int32 */
    if ((int64_t)batch * frames * SW_RESNET34_FEAT_DIM * 3 > INT32_MAX)
        return sw_fail(err, SW_ERR_ARG, "ResNet34: a batch of %d x %lld frames is too large", batch,
                       (long long)frames);
    sw_tensor x = {0};
    int64_t shape[3] = {batch, frames, SW_RESNET34_FEAT_DIM};
    if (sw_tensor_new(m->obj.be, SW_F32, 3, shape, &x, err) != SW_OK)
        return err->code;
    if (m->obj.be->upload(m->obj.be, x.data, features, sw_tensor_nbytes(&x), err) == SW_OK)
        forward(m, &x, batch, frames, masks, n_masks, mask_frames, out, err);
    sw_tensor_free(&x);
    return err->code;
}
