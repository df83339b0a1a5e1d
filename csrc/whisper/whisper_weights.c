/* Building the model from named host arrays through the shared loader
 * (named_tensors.h): every tensor is looked up by its state-dict name, its
 * shape checked against the dims, and copied to the backend as float32; with compute int8 the
 * linear layers' weights are quantized per row on the host first and go up as int8. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whisper_compute.h"
#include "whisper_internal.h"

typedef struct loader {
    sw_weight_source src;
    sw_whisper_compute compute;
    sw_dtype matrix; /* the weight matrices' type on the device (not int8 ones) */
    sw_dtype linear; /* the linear layers' (matrix, but bfloat16 on the CPU for "bfloat16") */
    sw_error *err;
    int borrow; /* float16 matrices used where they lie (sw_whisper_create_borrowing) */
} loader;

/* A float16 [rows, cols] matrix on the CPU, where the caller holds it: a
 * tensor that points there and that sw_wh_free never gives to the pool. */
static int borrowed(loader *ld, const sw_named_tensor *src, sw_tensor *dst)
{
    if (!ld->borrow || src->dtype != SW_F16 || ld->err->code != SW_OK)
        return 0;
    *dst = sw_tensor_view(SW_F16, src->ndim, src->shape, (void *)src->data);
    dst->backend = ld->src.be;
    return 1;
}

/* Copies src to the backend as `dtype`, converting there (once, at load). */
static sw_status upload_as(loader *ld, const sw_named_tensor *src, sw_tensor *dst, sw_dtype dtype)
{
    return sw_weights_upload_named(&ld->src, src, dst, dtype);
}

/* Finds `name` (printf-style, with one layer index) of shape ndim, d0..d2;
 * NULL (and ld->err set) otherwise. */
static const sw_named_tensor *find(loader *ld, int ndim, int64_t d0, int64_t d1, int64_t d2,
                                   const char *fmt, int layer)
{
    char name[160];
    /* names without a layer index simply ignore the extra argument */
    // cppcheck-suppress wrongPrintfScanfArgNum
    snprintf(name, sizeof name, fmt, layer);
    sw_shape want = {ndim, {d0, d1, d2, 0}};
    return sw_weights_find(&ld->src, name, want);
}

static sw_status load(loader *ld, sw_tensor *dst, int ndim, int64_t d0, int64_t d1, int64_t d2,
                      const char *fmt, int layer)
{
    char name[160];
    // cppcheck-suppress wrongPrintfScanfArgNum
    snprintf(name, sizeof name, fmt, layer);
    sw_shape want = {ndim, {d0, d1, d2, 0}};
    return sw_weights_load(&ld->src, dst, name, want);
}

/* A weight matrix that is not int8 (convolutions, token embedding): in the
 * compute type's matrix dtype. */
static sw_status load_matrix(loader *ld, sw_tensor *dst, int ndim, int64_t d0, int64_t d1,
                             int64_t d2, const char *fmt)
{
    const sw_named_tensor *src = find(ld, ndim, d0, d1, d2, fmt, 0);
    return src ? upload_as(ld, src, dst, ld->matrix) : ld->err->code;
}

/* int8 rows, scales and row sums of a [rows, cols] weight, in the layout
 * the backend's matmul_q8 reads (on the CPU quantized straight into its
 * packed blocks, on its workers; elsewhere quantized on the host, uploaded). */
static sw_status upload_q8(loader *ld, const sw_named_tensor *src, sw_wh_weight *dst)
{
    return sw_prepare_q8(ld->src.be, src->data, src->dtype, src->shape[0], src->shape[1], &dst->w,
                         &dst->scale, &dst->sum, ld->err);
}

/* A linear layer's weight [rows, cols]: float32, or int8 with compute int8. */
static sw_status load_linear(loader *ld, sw_wh_weight *dst, int64_t rows, int64_t cols,
                             const char *fmt, int layer)
{
    const sw_named_tensor *src = find(ld, 2, rows, cols, 0, fmt, layer);
    if (!src)
        return ld->err->code;
    if (sw_wh_compute_q8(ld->compute))
        return upload_q8(ld, src, dst);
    if (ld->linear != ld->matrix) /* the CPU's bfloat16: a converted copy, never borrowed */
        return upload_as(ld, src, &dst->w, ld->linear);
    return borrowed(ld, src, &dst->w) ? SW_OK : upload_as(ld, src, &dst->w, ld->linear);
}

static void load_attn(loader *ld, sw_wh_attn *a, const char *prefix, int layer, int64_t d,
                      int64_t d_kv)
{
    char f[128];
#define W(field, rows, cols, suffix)                                                               \
    snprintf(f, sizeof f, "%s.%s", prefix, suffix);                                                \
    load_linear(ld, &a->field, rows, cols, f, layer)
#define B(field, n, suffix)                                                                        \
    snprintf(f, sizeof f, "%s.%s", prefix, suffix);                                                \
    load(ld, &a->field, 1, n, 0, 0, f, layer)
    W(wq, d, d, "query.weight");
    B(bq, d, "query.bias");
    W(wk, d, d_kv, "key.weight");
    W(wv, d, d_kv, "value.weight");
    B(bv, d, "value.bias");
    W(wo, d, d, "out.weight");
    B(bo, d, "out.bias");
#undef W
#undef B
}

static void load_block(loader *ld, sw_wh_block *b, const char *prefix, int layer, int64_t d,
                       int64_t d_audio, int decoder)
{
    char f[128];
#define T1(field, suffix)                                                                          \
    snprintf(f, sizeof f, "%s.%s", prefix, suffix);                                                \
    load(ld, &b->field, 1, d, 0, 0, f, layer)
    T1(attn_ln_w, "attn_ln.weight");
    T1(attn_ln_b, "attn_ln.bias");
    snprintf(f, sizeof f, "%s.attn", prefix);
    load_attn(ld, &b->attn, f, layer, d, d);
    if (decoder) {
        T1(cross_ln_w, "cross_attn_ln.weight");
        T1(cross_ln_b, "cross_attn_ln.bias");
        snprintf(f, sizeof f, "%s.cross_attn", prefix);
        load_attn(ld, &b->cross, f, layer, d, d_audio);
    }
    T1(mlp_ln_w, "mlp_ln.weight");
    T1(mlp_ln_b, "mlp_ln.bias");
    snprintf(f, sizeof f, "%s.mlp.0.weight", prefix);
    load_linear(ld, &b->mlp1_w, 4 * d, d, f, layer);
    snprintf(f, sizeof f, "%s.mlp.0.bias", prefix);
    load(ld, &b->mlp1_b, 1, 4 * d, 0, 0, f, layer);
    snprintf(f, sizeof f, "%s.mlp.2.weight", prefix);
    load_linear(ld, &b->mlp2_w, d, 4 * d, f, layer);
    T1(mlp2_b, "mlp.2.bias");
#undef T1
}

static void free_attn(const sw_whisper *m, sw_wh_attn *a)
{
    sw_tensor *all[] = {&a->bq, &a->bv, &a->bo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_wh_free(m, all[i]);
    sw_wh_weight *weights[] = {&a->wq, &a->wk, &a->wv, &a->wo};
    for (size_t i = 0; i < sizeof weights / sizeof weights[0]; i++)
        sw_wh_weight_free(m, weights[i]);
}

static void free_block(const sw_whisper *m, sw_wh_block *b)
{
    sw_tensor *all[] = {&b->attn_ln_w, &b->attn_ln_b, &b->cross_ln_w, &b->cross_ln_b,
                        &b->mlp_ln_w,  &b->mlp_ln_b,  &b->mlp1_b,     &b->mlp2_b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_wh_free(m, all[i]);
    sw_wh_weight_free(m, &b->mlp1_w);
    sw_wh_weight_free(m, &b->mlp2_w);
    free_attn(m, &b->attn);
    free_attn(m, &b->cross);
}

static void free_weights(sw_model_object *o)
{
    sw_whisper *m = (sw_whisper *)o;
    sw_wh_enc_rigs_free(m); /* the encoder's graphs read the weights */
    sw_tensor *all[] = {&m->conv1_w, &m->conv1_b,  &m->conv2_w,  &m->conv2_b,
                        &m->enc_pos, &m->enc_ln_w, &m->enc_ln_b, &m->tok_emb,
                        &m->dec_pos, &m->dec_ln_w, &m->dec_ln_b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sw_wh_free(m, all[i]);
    sw_wh_weight_free(m, &m->tok_out);
    for (int i = 0; m->enc && i < m->dims.n_audio_layer; i++)
        free_block(m, &m->enc[i]);
    for (int i = 0; m->dec && i < m->dims.n_text_layer; i++)
        free_block(m, &m->dec[i]);
    free(m->enc);
    free(m->dec);
}

static const sw_model_kind kind = {"whisper", "sw_whisper_create", free_weights};

SW_MODEL_OBJECT_FUNCTIONS(sw_whisper, sw_whisper)

const sw_whisper_dims *sw_whisper_get_dims(const sw_whisper *m)
{
    return &m->dims;
}

static sw_status check_dims(const sw_whisper_dims *d, sw_error *err)
{
    const int v[] = {d->n_mels,        d->n_audio_ctx, d->n_audio_state, d->n_audio_head,
                     d->n_audio_layer, d->n_vocab,     d->n_text_ctx,    d->n_text_state,
                     d->n_text_head,   d->n_text_layer};
    const char *names[] = {"n_mels",        "n_audio_ctx", "n_audio_state", "n_audio_head",
                           "n_audio_layer", "n_vocab",     "n_text_ctx",    "n_text_state",
                           "n_text_head",   "n_text_layer"};
    for (int i = 0; i < 10; i++)
        if (v[i] < 1 || v[i] > (1 << 24))
            return sw_fail(err, SW_ERR_MODEL, "whisper dims: %s = %d is out of range", names[i],
                           v[i]);
    if (d->n_audio_state % d->n_audio_head || d->n_text_state % d->n_text_head)
        return sw_fail(err, SW_ERR_MODEL,
                       "whisper dims: the heads (%d, %d) must divide the widths (%d, %d)",
                       d->n_audio_head, d->n_text_head, d->n_audio_state, d->n_text_state);
    return SW_OK;
}

static sw_status create(sw_backend *be, const sw_whisper_dims *dims, const sw_named_tensor *tensors,
                        int n_tensors, sw_whisper_compute compute, int borrow, sw_whisper **out,
                        sw_error *err)
{
    *out = NULL;
    if (!be || !dims || (!tensors && n_tensors > 0) || n_tensors < 0)
        return sw_fail(err, SW_ERR_ARG, "sw_whisper_create: backend, dims and tensors needed");
    /* the one compute-type rule (whisper_compute.c), on what this backend offers */
    if (sw_whisper_compute_check((int)compute, sw_whisper_compute_offered(be), be->name, err))
        return err->code;
    sw_dtype matrix = compute == SW_WHISPER_FLOAT16 || compute == SW_WHISPER_INT8_FLOAT16 ? SW_F16
                      : compute == SW_WHISPER_BFLOAT16                                    ? SW_BF16
                                                                                          : SW_F32;
    /* the CPU's bfloat16: the linear layers' products in bfloat16 (bf16_gemm.h);
     * the convolutions and the token embedding stay float32 there */
    sw_dtype linear = matrix;
    if (compute == SW_WHISPER_BFLOAT16 && !sw_supports(be, SW_CAP_HALF_WEIGHTS, 0, 0))
        matrix = SW_F32;
    if (check_dims(dims, err) != SW_OK)
        return err->code;
    sw_whisper *m = sw_model_object_new(sizeof *m, &kind, be, tensors, n_tensors, err);
    if (!m)
        return err->code;
    m->enc = calloc((size_t)dims->n_audio_layer, sizeof *m->enc);
    m->dec = calloc((size_t)dims->n_text_layer, sizeof *m->dec);
    if (!m->enc || !m->dec) {
        sw_whisper_destroy(m);
        return sw_fail(err, SW_ERR_NOMEM, "whisper: out of host memory");
    }
    m->dims = *dims;
    m->compute = compute;
    /* the CPU computes float32 from halves as they lie (backend_cpu.c's
     * matmul_half); a GPU gets its own copy */
    m->borrows_halves = borrow && sw_supports(be, SW_CAP_HOST_MEMORY, 0, 0) && matrix == SW_F32;
    loader ld = {sw_weight_source_make(be, tensors, n_tensors, "whisper weights", err),
                 compute,
                 matrix,
                 linear,
                 err,
                 m->borrows_halves};
    const sw_whisper_dims *d = dims;
    int64_t da = d->n_audio_state, dt = d->n_text_state;
    load_matrix(&ld, &m->conv1_w, 3, da, d->n_mels, 3, "encoder.conv1.weight");
    load(&ld, &m->conv1_b, 1, da, 0, 0, "encoder.conv1.bias", 0);
    load_matrix(&ld, &m->conv2_w, 3, da, da, 3, "encoder.conv2.weight");
    load(&ld, &m->conv2_b, 1, da, 0, 0, "encoder.conv2.bias", 0);
    load(&ld, &m->enc_pos, 2, d->n_audio_ctx, da, 0, "encoder.positional_embedding", 0);
    for (int i = 0; i < d->n_audio_layer; i++)
        load_block(&ld, &m->enc[i], "encoder.blocks.%d", i, da, da, 0);
    load(&ld, &m->enc_ln_w, 1, da, 0, 0, "encoder.ln_post.weight", 0);
    load(&ld, &m->enc_ln_b, 1, da, 0, 0, "encoder.ln_post.bias", 0);
    /* int8: the lookups keep float rows (CTranslate2 leaves embeddings
     * unquantized; dequantized rows moved its outputs further from ours), the
     * output layer gets an int8 copy */
    const sw_named_tensor *emb =
        find(&ld, 2, d->n_vocab, dt, 0, "decoder.token_embedding.weight", 0);
    if (emb && !borrowed(&ld, emb, &m->tok_emb))
        upload_as(&ld, emb, &m->tok_emb, ld.matrix);
    if (sw_wh_compute_q8(compute))
        load_linear(&ld, &m->tok_out, d->n_vocab, dt, "decoder.token_embedding.weight", 0);
    load(&ld, &m->dec_pos, 2, d->n_text_ctx, dt, 0, "decoder.positional_embedding", 0);
    for (int i = 0; i < d->n_text_layer; i++)
        load_block(&ld, &m->dec[i], "decoder.blocks.%d", i, dt, da, 1);
    load(&ld, &m->dec_ln_w, 1, dt, 0, 0, "decoder.ln.weight", 0);
    load(&ld, &m->dec_ln_b, 1, dt, 0, 0, "decoder.ln.bias", 0);
    if (err->code == SW_OK)
        be->synchronize(be, err);
    if (err->code != SW_OK) {
        sw_whisper_destroy(m);
        return err->code;
    }
    *out = m;
    return SW_OK;
}

sw_status sw_whisper_create(sw_backend *be, const sw_whisper_dims *dims,
                            const sw_named_tensor *tensors, int n_tensors,
                            sw_whisper_compute compute, sw_whisper **out, sw_error *err)
{
    return create(be, dims, tensors, n_tensors, compute, 0, out, err);
}

sw_status sw_whisper_create_borrowing(sw_backend *be, const sw_whisper_dims *dims,
                                      const sw_named_tensor *tensors, int n_tensors,
                                      sw_whisper_compute compute, sw_whisper **out, sw_error *err)
{
    return create(be, dims, tensors, n_tensors, compute, 1, out, err);
}

static size_t borrowed_in(const sw_tensor *t)
{
    return t->dtype == SW_F16 ? sw_tensor_nbytes(t) : 0;
}

static size_t borrowed_in_attn(const sw_wh_attn *a)
{
    return borrowed_in(&a->wq.w) + borrowed_in(&a->wk.w) + borrowed_in(&a->wv.w) +
           borrowed_in(&a->wo.w);
}

static size_t borrowed_in_block(const sw_wh_block *b)
{
    return borrowed_in(&b->mlp1_w.w) + borrowed_in(&b->mlp2_w.w) + borrowed_in_attn(&b->attn) +
           borrowed_in_attn(&b->cross);
}

size_t sw_whisper_borrowed_bytes(const sw_whisper *m)
{
    if (!m || !m->borrows_halves)
        return 0;
    size_t n = borrowed_in(&m->tok_emb);
    for (int i = 0; i < m->dims.n_audio_layer; i++)
        n += borrowed_in_block(&m->enc[i]);
    for (int i = 0; i < m->dims.n_text_layer; i++)
        n += borrowed_in_block(&m->dec[i]);
    return n;
}
