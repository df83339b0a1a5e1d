/* What the encoder, decoder and weight files of the Whisper model share: the
 * structs behind the opaque handles and a few layer helpers. */
#ifndef SW_WHISPER_INTERNAL_H
#define SW_WHISPER_INTERNAL_H

#include "model_object.h"
#include "ops.h"
#include "fused_ops.h"
#include "whisper_model.h"

/* A linear layer's weight [out, in]: float32 in `w`, or (compute int8) int8
 * rows in `w` with their scales and row sums for the backend's matmul_q8. */
typedef struct sw_wh_weight {
    sw_tensor w, scale, sum;
} sw_wh_weight;

/* One attention: query, key (no bias), value, out projections. */
typedef struct sw_wh_attn {
    sw_wh_weight wq, wk, wv, wo;
    sw_tensor bq, bv, bo;
} sw_wh_attn;

/* A pre-LN block; the cross-attention parts are only filled in the decoder. */
typedef struct sw_wh_block {
    sw_tensor attn_ln_w, attn_ln_b;
    sw_wh_attn attn;
    sw_tensor cross_ln_w, cross_ln_b;
    sw_wh_attn cross;
    sw_tensor mlp_ln_w, mlp_ln_b, mlp1_b, mlp2_b;
    sw_wh_weight mlp1_w, mlp2_w;
} sw_wh_block;

/* A captured encoder window (whisper_encoder_graph.c). */
typedef struct sw_wh_enc_rig sw_wh_enc_rig;
#define SW_WH_ENC_RIGS 2

struct sw_whisper {
    sw_model_object obj; /* first: model_object.h */
    sw_whisper_dims dims;
    sw_tensor conv1_w, conv1_b, conv2_w, conv2_b, enc_pos, enc_ln_w, enc_ln_b;
    sw_tensor tok_emb, dec_pos, dec_ln_w, dec_ln_b;
    sw_wh_weight tok_out; /* compute int8: the output layer's int8 copy of tok_emb */
    sw_whisper_compute compute;
    sw_wh_block *enc, *dec;
    /* its float16 tensors point into the caller's arrays (on the CPU, only
     * those exist): sw_wh_free leaves them alone */
    int borrows_halves;
    /* The encoder's window as graphs, made at the first windows of a batch
     * size and replayed after (whisper_encoder_graph.c): two, so a window
     * may be encoded while the last one's output is still read. */
    sw_wh_enc_rig *enc_rig[SW_WH_ENC_RIGS];
};

struct sw_whisper_audio {
    sw_whisper *model;
    int batch;
    sw_tensor features; /* [batch, n_audio_ctx, n_audio_state] */
    /* per decoder layer, [batch, n_audio_ctx, n_text_state]; on the CPU head
     * by head, [batch, n_text_head, n_audio_ctx, d_head] (whisper_encoder.c) */
    sw_tensor *cross_k, *cross_v;
    int borrowed; /* an item's view (sw_whisper_audio_item): its tensors are not its own */
    int *lent;    /* a rig's outputs are its tensors: the rig's flag, cleared when it is freed */
};

/* Scratch tensors of one call, freed together on every path. */
#define SW_WH_MAX_SCRATCH 24
typedef struct sw_wh_scratch {
    sw_backend *be;
    sw_tensor t[SW_WH_MAX_SCRATCH];
    int n;
} sw_wh_scratch;

/* The encoder's activations, made before its ops run (whisper_encoder.c),
 * so that the same ops run at once or into a graph. Views of s. */
typedef struct sw_wh_enc_buffers {
    sw_wh_scratch s;
    sw_tensor *mel, *mel_tm, *c1, *x, *h, *q, *k, *v, *a, *mid;
    sw_tensor *cols; /* the convolutions' columns (sw_conv1d_work), or NULL: conv1d's own */
    sw_tensor *ids;  /* the head-major gather's row ids (the CPU's layout), or NULL */
} sw_wh_enc_buffers;

struct sw_whisper_state {
    sw_whisper *model;
    const sw_whisper_audio *audio;
    int n_seq;
    int length; /* positions filled in every sequence's cache */
    int capture;
    /* every layer's keys and values in one block, [2 * layers, n_seq,
     * n_text_ctx, n_text_state], so that a reorder is one gather
     * (whisper_decoder.c copy_rows); kv_spare: the block a reorder writes,
     * made at the first, then the two trade places */
    sw_tensor kv, kv_spare;
    sw_tensor reorder_ids;  /* [2 * layers * n_seq] the reorder's index, made at the first */
    int32_t *host_reorder;  /* its host side */
    sw_tensor *k, *v;       /* per decoder layer, views of kv: [n_seq, n_text_ctx, n_text_state] */
    sw_tensor *cross_probs; /* per decoder layer, kept by the last decode when capturing */
    /* A decode's buffers (whisper_decoder.c step_buffers): the ids block
     * (with room for the search's row plans), the activations and the
     * logits, made by the first decode of a shape and kept while the shape
     * holds, so that a step allocates nothing (a CUDA graph keeps the
     * pointers it was captured with; issue 37). */
    sw_wh_scratch step;
    int step_seq, step_tok; /* the shape they were made for; 0: none */
    int32_t *host_ids;      /* the ids block's host side */
    /* The backend reads the self-attention's length from the ids block
     * (after the last indices; SW_CAP_DEVICE_LENGTH), so a step's ops do
     * not change with the length and can be captured once (issue 37). */
    int device_length;
    /* One-token decodes replay captured graphs (a backend with graphs and
     * SAYWHO_CUDA_GRAPHS not 0): one per (block the layers read, whether a
     * reorder's gather comes first), made at the first step that needs it
     * and kept with the step buffers they point into. */
    int graphs;
    sw_graph *graph[4];
    const void *graph_kv[4];
    int graph_gathers[4];
    /* The search the graphs end with (sw_wh_decode_search), as captured:
     * whether there is one, its mask and its params. A decode that asks
     * for another drops the graphs (a call's steps all ask the same). */
    int graph_searches;
    const void *graph_mask;
    sw_search_params graph_params;
    /* The device search's work (SW_SEARCH_WORK at SW_SEARCH_MAX_K), made
     * by the first search of the step buffers' shape and kept with them,
     * and the host side of its results (SW_SEARCH_FOUND). */
    sw_tensor search_work;
    int32_t *host_found;
    /* A reorder deferred into the next step's graph: kv is to be gathered
     * from kv_spare by reorder_ids before anything reads it. */
    int reorder_pending;
};

/* sw_whisper_decode with the logits left where the backend computed them:
 * *logits is the state's, valid until its next decode (the device's search
 * step reads it there, whisper_generate.c). */
sw_status sw_wh_decode_device(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                              const sw_tensor **logits, sw_error *err);

/* A decode's search on the device (backend.h search_step), run after the
 * layers, inside the step's graph where the step is one: mask [n_vocab]
 * int8, the same for the state's life (its graphs keep the pointer); p the
 * same for every step; rows [n_seq] this step's plans (host memory: they go
 * up with the token ids, in one copy). ids and scores [n_seq, p->k] and
 * no_speech [n_seq] (read where a row asks for it) are host memory, filled
 * by the step's one download. */
typedef struct sw_wh_search {
    const sw_tensor *mask;
    const sw_search_params *p;
    const sw_search_row *rows;
    int32_t *ids;
    float *scores;
    float *no_speech;
} sw_wh_search;

/* sw_wh_decode_device, then the search over its logits. */
sw_status sw_wh_decode_search(sw_whisper_state *st, const int32_t *tokens, int n_seq, int n_tokens,
                              const sw_wh_search *search, sw_error *err);

/* Generation narrows a batch as its windows finish (whisper_generate.c). */

/* Items first .. first + count - 1 of an encoding as a borrowed view. */
sw_status sw_wh_audio_items(const sw_whisper_audio *au, int first, int count,
                            sw_whisper_audio **out, sw_error *err);

/* Exchanges items a and b's cross-attention keys and values in place (an
 * exchange, so the generation that moves them can put them back). */
sw_status sw_wh_audio_swap(const sw_whisper_audio *au, int a, int b, sw_error *err);

/* A new state of n sequences over `audio` whose sequence s continues
 * sequence src_index[s] of src (src reads another view of the same
 * encoding). */
sw_status sw_wh_state_narrow(const sw_whisper_state *src, const sw_whisper_audio *audio,
                             const int *src_index, int n, sw_whisper_state **out, sw_error *err);

/* The encoder in parts (whisper_encoder.c), for its graph
 * (whisper_encoder_graph.c): an audio of `batch` items without tensors; its
 * outputs (features, cross-attention keys and values); the activations
 * (with_cols: the convolutions' columns too); the ops from b->mel to the
 * outputs, the same at once or captured. */
sw_whisper_audio *sw_wh_audio_alloc(sw_whisper *m, int batch);
sw_status sw_wh_enc_outputs_new(sw_whisper_audio *au, sw_error *err);
sw_status sw_wh_enc_buffers_new(sw_whisper *m, int batch, int with_cols, sw_wh_enc_buffers *b,
                                sw_error *err);
void sw_wh_enc_buffers_free(const sw_whisper *m, sw_wh_enc_buffers *b);
sw_status sw_wh_enc_run(sw_whisper *m, sw_wh_enc_buffers *b, sw_whisper_audio *au, sw_error *err);

/* The window on a backend with graphs: *done 0 when it cannot (no graphs,
 * SAYWHO_CUDA_GRAPHS=0, both rigs lent out), and the caller runs the ops
 * itself. */
sw_status sw_wh_enc_graph_encode(sw_whisper *m, const float *mel, int batch, sw_whisper_audio *au,
                                 int *done, sw_error *err);
/* Frees the rigs, their graphs and buffers (the model's free_weights). */
void sw_wh_enc_rigs_free(sw_whisper *m);

/* Whether the linear layers are int8 (INT8, INT8_FLOAT16). */
static inline int sw_wh_compute_q8(sw_whisper_compute c)
{
    return c == SW_WHISPER_INT8 || c == SW_WHISPER_INT8_FLOAT16;
}

/* Frees a tensor of the model unless its backend is gone. */
void sw_wh_free(const sw_whisper *m, sw_tensor *t);

/* The same bytes seen with another shape (a view: never freed). */
sw_tensor sw_wh_view2(const sw_tensor *t, int64_t d0, int64_t d1);
sw_tensor sw_wh_view3(const sw_tensor *t, int64_t d0, int64_t d1, int64_t d2);

sw_tensor *sw_wh_new(sw_wh_scratch *s, sw_dtype dtype, int ndim, const int64_t *shape,
                     sw_error *err);
void sw_wh_scratch_free(sw_wh_scratch *s);

/* y = x w^T + b over the rows of x ([rows, in] -> [rows, out]); accumulate:
 * y += instead of y =. b may be an empty tensor (no bias). */
sw_status sw_wh_linear(const sw_tensor *x, const sw_wh_weight *w, const sw_tensor *b, sw_tensor *y,
                       int accumulate, sw_error *err);

/* Frees a linear weight's tensors (see sw_wh_free). */
void sw_wh_weight_free(const sw_whisper *m, sw_wh_weight *w);

/* x += mlp(mlp_ln(x)) with x [rows, d]; h [rows, d] and mid [rows, 4d] scratch. */
sw_status sw_wh_mlp(const sw_wh_block *blk, sw_tensor *x, sw_tensor *h, sw_tensor *mid,
                    sw_error *err);

/* A host int32 array put on the backend as a scratch tensor. */
sw_tensor *sw_wh_ids(sw_wh_scratch *s, const int32_t *ids, int64_t n, sw_error *err);

#endif
