/* The backend table: model code is written once as calls through this table,
 * and each device (the CPU here, CUDA in cuda/) fills it in. The CUDA backend
 * lives in its own shared library and hands the core a filled-in table from
 * sw_cuda_backend_open(), so the struct layout is a versioned ABI. */
#ifndef SW_BACKEND_H
#define SW_BACKEND_H

#include <stddef.h>

#include "pool.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bump when the table's layout changes; the loader refuses a mismatch. */
#define SW_BACKEND_ABI 16

typedef enum sw_device_kind { SW_DEVICE_CPU = 0, SW_DEVICE_CUDA = 1 } sw_device_kind;

typedef struct sw_device_info {
    char name[128];
    size_t total_bytes; /* device memory (GPU) or physical memory (CPU) */
    size_t free_bytes;
    int compute_major; /* GPU only */
    int compute_minor;
    int threads; /* CPU only: worker threads in use */
} sw_device_info;

typedef struct sw_backend sw_backend;

/* A recorded sequence of a backend's ops, replayed as one launch (a CUDA
 * graph); opaque, made by capture_end and freed by graph_free. */
typedef struct sw_graph sw_graph;

/* What a device backend asked of its device since it opened or was last
 * reset: the figures of the GPU step budget (docs/cuda_backend.md), which the
 * emulator counts exactly as a GPU build does, so CI checks them. */
typedef struct sw_backend_counters {
    uint64_t launches;       /* kernels, cuBLAS calls and device-to-device copies queued */
    uint64_t graph_launches; /* CUDA graphs replayed */
    uint64_t host_syncs;     /* times the host waited for the device's stream */
    uint64_t bytes_up;       /* copied host to device */
    uint64_t bytes_down;     /* copied device to host */
} sw_backend_counters;

/* What a model may ask a backend (the `supports` entry) before it takes a
 * path that not every backend has; the model never asks which backend it
 * has (ggml's supports_op is the pattern). a and b are the sizes the answer
 * depends on, as each says; 0 where none. */
typedef enum sw_capability {
    /* Tensors are host memory: a tensor may point at an array the caller
     * holds (borrowed weights), and a loader may write into one directly. */
    SW_CAP_HOST_MEMORY = 1,
    /* Weights of every op may be f16 or bf16: matmul's b, conv1d's w and
     * gather_rows' table. A backend without it may still take the two
     * below. */
    SW_CAP_HALF_WEIGHTS = 2,
    /* attention takes k, v head-major, [B_kv, H, T_kv, d_head]. */
    SW_CAP_HEAD_MAJOR_KV = 3,
    /* The fused entries of ABI 6 below, each answered for its shapes. */
    SW_CAP_GATHER_LINEAR = 4,  /* b = C_out */
    SW_CAP_CONV3X3 = 5,        /* a = C_in, b = C_out */
    SW_CAP_CONV3X3_SINGLE = 6, /* b = C_out */
    SW_CAP_AFFINE_RELU_ROWS = 7,
    SW_CAP_SPAN_ABS_POOL = 8,
    /* search_step (ABI 7) for k = a best per row */
    SW_CAP_SEARCH_STEP = 9,
    /* matmul of a float32 a by a transposed b of dtype a (SW_F16 or SW_BF16:
     * compute_type "float16" / "bfloat16" on a backend that widens halves
     * as it reads them). */
    SW_CAP_HALF_TRANSPOSED_B = 10,
    /* gather_rows from a table of dtype a (SW_F16, SW_BF16). */
    SW_CAP_HALF_TABLE = 11,
    /* attention reads a length from device memory (sw_attention_params'
     * `length`, ABI 10) */
    SW_CAP_DEVICE_LENGTH = 12,
    /* fbank and gather_centered (ABI 12): speaker-embedding features made
     * on the device from the audio */
    SW_CAP_FBANK = 13,
    /* search_step draws (sw_search_params' temperature > 0, ABI 15): random
     * sampling's token chosen on the device from the row's uniform */
    SW_CAP_SEARCH_SAMPLE = 14,
    /* mel_power and gather_scaled (ABI 16): GE2E's features made on the
     * device from the audio */
    SW_CAP_MEL_POWER = 15
} sw_capability;

/* ABI 7: one step of Whisper's token search on the device (search_step).
 * Per row, what changes from step to step: what the logits rules of
 * whisper_logits.h disable beyond the mask, its cumulative score and
 * whether the no-speech probability is wanted. ABI 14: the rows are read
 * from device memory when the search runs (the caller uploads them with the
 * step's token ids), so that a captured graph replays each step's rows;
 * all fields are 4 bytes, SW_SEARCH_ROW_WORDS int32 words a row. */
typedef struct sw_search_row {
    int32_t from[3], to[3]; /* ranges [from, to) disabled; to <= from: none */
    int32_t mask_bits;      /* the mask's bits that disable a token at this step */
    int32_t check;          /* the timestamp rule's check follows (whisper_logits.c) */
    int32_t no_speech;      /* >= 0: also softmax(the raw row)[no_speech] (ABI 14: per row) */
    float cum;              /* added to every log-probability of the row */
    /* ABI 15, a draw (temperature > 0): the row's uniform in [0, 1) as
     * m * 2^-53, m's low 32 bits then its high 21 (sw_rng_next53), so the
     * device reads the very number the host's sampler would */
    uint32_t uniform[2];
} sw_search_row;

#define SW_SEARCH_ROW_WORDS ((int64_t)(sizeof(sw_search_row) / sizeof(int32_t)))

/* What every row of one search_step shares, the same for every step of a
 * decode (a graph keeps them as they were at its capture). */
typedef struct sw_search_params {
    int32_t k;               /* best tokens per row, 1 .. SW_SEARCH_MAX_K */
    int32_t log_softmax;     /* scores are log-probabilities + cum; 0: the masked logits */
    int32_t timestamp_begin; /* the check's split: text below it, timestamps from it */
    /* ABI 15: > 0 (and k 1): instead of the best, one token drawn from
     * softmax(scores / temperature) at the row's uniform, as
     * whisper_sampling.c draws it (SW_DRAW_UNITS); 0: the k best */
    float temperature;
} sw_search_params;

/* A draw's cumulative sum is of integers, each probability as
 * floor(p * SW_DRAW_UNITS), so that it is exact in any order and a device
 * that sums in parallel finds the same token as the CPU's loop: the first
 * whose running sum passes uniform * total (all below 2^53, so exact in a
 * double). A token below 2^-52 is never drawn, and each loses less than
 * 2^-52 to the floor: over 51,866 tokens at most 1.2e-11 of the mass. */
#define SW_DRAW_UNITS 0x1p52

#define SW_SEARCH_MAX_K 16

/* search_step's work (ABI 9): f32 entries the caller lends it for rows of n
 * logits and k best, so that a step allocates nothing. The search leaves
 * its results at the end (ABI 14), side by side so that one download
 * brings them: from entry SW_SEARCH_FOUND_AT(rows, n), ids [rows, k] int32,
 * scores [rows, k] f32, then the no-speech probabilities [rows] f32,
 * SW_SEARCH_FOUND(rows, k) entries in all. */
#define SW_SEARCH_WORK(rows, n, k)  ((int64_t)(rows) * ((int64_t)(n) + 2 * (int64_t)(k) + 1))
#define SW_SEARCH_FOUND_AT(rows, n) ((int64_t)(rows) * (int64_t)(n))
#define SW_SEARCH_FOUND(rows, k)    ((int64_t)(rows) * (2 * (int64_t)(k) + 1))

/* ABI 12: Kaldi's log mel filterbank frames (audio/fbank.h's arithmetic),
 * for `fbank`. Frame t reads samples t * shift .. t * shift + window - 1. */
typedef struct sw_fbank_params {
    int32_t window;       /* samples a frame (400: 25 ms at 16 kHz) */
    int32_t shift;        /* samples between frames (160) */
    int32_t n_fft;        /* the padded length, a power of two >= window (512) */
    int32_t remove_dc;    /* 1: each frame less its mean */
    int32_t povey_window; /* 1: Kaldi's povey window, 0: a symmetric Hamming window */
    float input_scale;    /* samples are multiplied by this first */
    float preemphasis;    /* 0.97 */
} sw_fbank_params;

/* How a linear layer's weight lies once the backend has prepared it
 * (prepare_linear): as loaded, [out, in], or transposed, [in, out]. */
typedef enum sw_weight_layout { SW_LAYOUT_OUT_IN = 0, SW_LAYOUT_IN_OUT = 1 } sw_weight_layout;

/* Multi-head scaled dot-product attention, see the `attention` op. */
typedef struct sw_attention_params {
    int n_heads;
    int64_t kv_len;        /* keys 0..kv_len-1 of k and v are valid (<= their rows) */
    int64_t causal_offset; /* < 0: no mask; else query i sees keys j <= causal_offset + i */
    float scale;           /* applied to q . k before the softmax, usually 1/sqrt(d_head) */
    /* ABI 10: NULL, or a device int32 L read when the op runs, not when it
     * is called: kv_len + L keys (at most k's rows) and a causal offset of
     * causal_offset + L (when causal_offset >= 0). A captured graph thus
     * replays at each step's length, the launch shaped for k's rows. Only
     * where the backend supports SW_CAP_DEVICE_LENGTH, and without probs
     * (their shape would change). */
    const int32_t *length;
} sw_attention_params;

struct sw_backend {
    int abi;
    sw_device_kind kind;
    const char *name;
    void *impl; /* backend-private state */

    /* Memory: all bytes come from the backend's counted pool. */
    void *(*alloc)(sw_backend *b, size_t bytes, sw_error *err);
    void (*free)(sw_backend *b, void *ptr);
    sw_pool_stats (*memory)(sw_backend *b);
    void (*trim)(sw_backend *b);
    sw_status (*device_info)(sw_backend *b, sw_device_info *info, sw_error *err);
    sw_status (*upload)(sw_backend *b, void *dst, const void *host_src, size_t bytes,
                        sw_error *err);
    sw_status (*download)(sw_backend *b, void *host_dst, const void *src, size_t bytes,
                          sw_error *err);
    sw_status (*synchronize)(sw_backend *b, sw_error *err);

    /* Ops. Shapes are checked by the sw_* wrappers in ops.c before these run,
     * so a backend only sees valid, f32 (or as documented) operands. */

    /* c[m,n] = alpha * a[m,k] @ op(b) + beta * c; op(b) = b[k,n] or b[n,k]^T.
     * b may be f16 or bf16 (a f32 or b's type, c f32: compute_type
     * float16/bfloat16) where the backend supports SW_CAP_HALF_WEIGHTS (as
     * may conv1d's w and gather_rows' table), or SW_CAP_HALF_TRANSPOSED_B.
     * A download completes before it returns; an upload returns once the
     * host's bytes are taken (the caller may reuse its buffer at once; the
     * CUDA backend stages them and queues the copy before every later op);
     * ops are ordered on one stream, so a freed block may be reused at once. One thread at a
     * time per backend (the Python Runtime holds a lock around each call). */
    sw_status (*matmul)(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                        int trans_b, float alpha, float beta, sw_error *err);
    /* out = a + b, where b has a's shape or the shape of a's trailing dimensions
     * (a row vector, a [T, d] block over a batch), repeated along a */
    sw_status (*add)(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                     sw_error *err);
    sw_status (*mul)(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                     sw_error *err);
    sw_status (*scale)(sw_backend *be, const sw_tensor *a, float s, sw_tensor *out, sw_error *err);
    sw_status (*gelu)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* softmax over the last dimension; a row that is all -inf (fully masked)
     * gives zeros, not NaN */
    sw_status (*softmax)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* layer norm over the last dimension with gamma, beta of that length */
    sw_status (*layernorm)(sw_backend *be, const sw_tensor *a, const sw_tensor *gamma,
                           const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err);
    /* dtype conversion between f32, f16 and bf16 */
    sw_status (*convert)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);

    /* ABI 2: the ops a transformer forward needs beyond the above. */

    /* out[..., c, r] = a[..., r, c]: swaps the last two dimensions */
    sw_status (*transpose)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* 1-D convolution, time-major: x [B, T_in, C_in], w [C_out, C_in, K] (PyTorch's
     * layout), bias [C_out] or NULL, out [B, T_out, C_out] with
     * T_out = (T_in + 2 * pad - K) / stride + 1 and zero padding. */
    sw_status (*conv1d)(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                        const sw_tensor *bias, int stride, int pad, sw_tensor *out, sw_error *err);
    /* out[i, :] = table[ids[i], :]; table is seen as rows over its last dimension,
     * ids is int32 on this backend. An id out of range gives a row of zeros. */
    sw_status (*gather_rows)(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                             sw_tensor *out, sw_error *err);
    /* dst[ids[i], :] = src[i, :]; ids out of range are skipped. ids must not repeat. */
    sw_status (*scatter_rows)(sw_backend *be, const sw_tensor *src, const sw_tensor *ids,
                              sw_tensor *dst, sw_error *err);
    /* out = softmax(q k^T * scale + mask) v per head. q, out [B, T_q, H * d_head];
     * k, v [B_kv, T_kv, H * d_head] with B a multiple of B_kv: query batch b reads
     * key batch b / (B / B_kv), so beams share one audio's cross-attention keys.
     * k, v may instead be head-major, [B_kv, H, T_kv, d_head] (the CPU's
     * form for Whisper's cross-attention: each head's keys one contiguous run;
     * a backend without it refuses four dimensions).
     * probs, when not NULL, receives the attention weights [B, H, T_q, kv_len]. */
    sw_status (*attention)(sw_backend *be, const sw_tensor *q, const sw_tensor *k,
                           const sw_tensor *v, const sw_attention_params *p, sw_tensor *out,
                           sw_tensor *probs, sw_error *err);

    /* ABI 3: the ops of pyannote's segmentation network (SincNet, LSTM).
     * Time-major like conv1d: x [B, T, C]. Each may run in place (out == x). */

    /* out = a where a >= 0, else alpha * a */
    sw_status (*leaky_relu)(sw_backend *be, const sw_tensor *a, float alpha, sw_tensor *out,
                            sw_error *err);
    /* out = |a| */
    sw_status (*absolute)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* out [B, (T - kernel) / stride + 1, C]: the maximum of each window of
     * `kernel` frames taken every `stride` frames; no padding. */
    sw_status (*max_pool1d)(sw_backend *be, const sw_tensor *x, int kernel, int stride,
                            sw_tensor *out, sw_error *err);
    /* Per (batch, channel), over time: (x - mean) / sqrt(var + eps) * gamma[c]
     * + beta[c], var biased; gamma and beta [C], or both NULL for no affine. */
    sw_status (*instance_norm)(sw_backend *be, const sw_tensor *x, const sw_tensor *gamma,
                               const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err);
    /* log of the softmax over the last dimension */
    sw_status (*log_softmax)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* One LSTM layer over x [B, T, in], D = 1 or 2 directions (the second runs
     * backwards in time): w_ih [D, 4H, in], w_hh [D, 4H, H], bias [D, 4H]
     * (b_ih + b_hh), gates in PyTorch's order i, f, g, o; out [B, T, D * H]
     * with direction d in columns d * H .. d * H + H - 1. Not in place.
     * state NULL: a zero initial state. ABI 11: else [2, D, B, H], h then c,
     * read as the initial state and overwritten with the final one (after
     * the last step of each direction), so that a long sequence can run in
     * pieces (the VAD's LSTM across a recording). */
    sw_status (*lstm)(sw_backend *be, const sw_tensor *x, const sw_tensor *w_ih,
                      const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                      sw_tensor *out, sw_error *err);

    /* ABI 4: int8 weights (compute_type "int8"). c[m, n] = qa . w^T / (sa * w_scale)
     * + beta * c, where qa, sa quantize the rows of a[m, k] (f32) as
     * runtime/q8_quantize.h says; w [n, k] int8 with w_scale [n] f32 and w_sum [n]
     * int32 (the sums of w's rows). The int32 sums are exact. */
    sw_status (*matmul_q8)(sw_backend *be, const sw_tensor *a, const sw_tensor *w,
                           const sw_tensor *w_scale, const sw_tensor *w_sum, sw_tensor *c,
                           float beta, sw_error *err);

    /* ABI 5: the embeddings' and the VAD's last steps, so that their
     * forwards stay on the device (docs/model_objects.md). */

    /* Statistics pooling over time, summed in double. x [B, T, C] or
     * [B, G, T, C] (G groups of T frames, ResNet34's frequency rows); w NULL
     * (every frame weighs 1) or [B, M, T] frame weights, M pools per item;
     * out [B * M, 2 * C * G], channel-major like a flattened (C, G):
     * out[i, k * G + g] = the weighted mean of x[b, g, :, k], and
     * out[i, C * G + k * G + g] = sqrt(sum_t w (x - mean)^2 / (V1 - V2 / V1)
     * + eps), V1 = sum_t w, V2 = sum_t w^2: the unbiased weighted standard
     * deviation (weights of 1: divided by T - 1). All-zero weights give NaN. */
    sw_status (*stats_pool)(sw_backend *be, const sw_tensor *x, const sw_tensor *w, double eps,
                            sw_tensor *out, sw_error *err);
    /* a [..., 2K] holds K real parts then K imaginary parts per row;
     * out [..., K] = sqrt(re * re + im * im), each product rounded (no FMA). */
    sw_status (*magnitude)(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
    /* Each row over the last dimension divided by its L2 norm (summed in
     * double), or by eps where the norm is smaller. May run in place. */
    sw_status (*l2_normalize)(sw_backend *be, const sw_tensor *a, float eps, sw_tensor *out,
                              sw_error *err);

    /* ABI 6: what a backend may do beyond the ops above, and the layouts it
     * wants its weights in. A backend that declines an entry leaves it NULL
     * and answers 0 for its capability (fused_ops.h wraps these for model
     * code). The CPU and CUDA backends both fill every fused entry, so CAM++
     * and segmentation call them without a second, composed path; a backend
     * without them is refused by those models by name. */

    /* 1 when the backend can do `cap` for sizes a, b (see sw_capability). */
    int (*supports)(sw_backend *be, sw_capability cap, int64_t a, int64_t b);
    /* A linear layer's weight w [out, in] (float32) in the layout the
     * backend's gather_linear reads fastest: w may be replaced (the old one
     * freed) and *layout says how it lies. */
    sw_status (*prepare_linear)(sw_backend *be, sw_tensor *w, sw_weight_layout *layout,
                                sw_error *err);
    /* The int8 form of a [rows, cols] host matrix (f32, f16 or bf16) that
     * matmul_q8 reads: w [rows, cols] int8 (or the backend's packed form of
     * it), scale [rows] f32, sum [rows] int32, allocated here, quantized as
     * runtime/q8_quantize.h says. NULL: the core quantizes on the host and
     * uploads row-major int8. */
    sw_status (*prepare_q8)(sw_backend *be, const void *src, sw_dtype dtype, int64_t rows,
                            int64_t cols, sw_tensor *w, sw_tensor *scale, sw_tensor *sum,
                            sw_error *err);
    /* y [n_out, C_out] = relu?(cols . w^T + bias), row r of cols being x's rows
     * ids[r * taps .. r * taps + taps - 1] side by side (an id out of range reads
     * zeros), or x's row r when ids is NULL (taps 1): a convolution as an
     * im2col and one product, fused. w from prepare_linear ([C_out, taps * C_in]
     * or, with SW_LAYOUT_IN_OUT, its transpose); bias [C_out] or NULL; `block`:
     * the most output rows one worker takes at a time. Float32, contiguous. */
    sw_status (*gather_linear)(sw_backend *be, const sw_tensor *x, const sw_tensor *ids, int taps,
                               const sw_tensor *w, sw_weight_layout layout, const sw_tensor *bias,
                               int relu, int64_t block, sw_tensor *y, sw_error *err);
    /* The transformed weight `conv3x3` reads for a 3x3 convolution of weight
     * w (w's rows tap-major: [C_out, 9 * C_in] as laid out, or its
     * transpose), at stride 1 or 2 along the image rows; allocated here. */
    sw_status (*prepare_conv3x3)(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                                 int stride, sw_tensor *u, sw_error *err);
    /* y = relu?(conv3x3(x) + bias + add), zero padding 1, stride 1 or 2 along
     * the rows, for `batch` channels-last images of h rows, image b being
     * off[b + 1] - off[b] columns wide, its rows of C_in from row h * off[b] of
     * x ([h * off[batch], C_in]); y and add (NULL or a residual) alike with
     * (h - 1) / stride + 1 rows per column. u from prepare_conv3x3 at this
     * stride; bias [C_out] or NULL. Float32, contiguous. */
    sw_status (*conv3x3)(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                         const int64_t *off, const sw_tensor *u, int stride, const sw_tensor *bias,
                         const sw_tensor *add, int relu, sw_tensor *y, sw_error *err);
    /* The same at stride 1 for single-channel images (x [h * off[batch], 1])
     * into C channels: w [9, C] (tap, then channel: a prepared weight of
     * layout SW_LAYOUT_IN_OUT), bias [C] or NULL. */
    sw_status (*conv3x3_single)(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                                const int64_t *off, const sw_tensor *w, const sw_tensor *bias,
                                int relu, sw_tensor *y, sw_error *err);
    /* dst [n, c] = relu(src[r * ld + k] * scale[k] + shift[k]): an affine
     * (a folded BatchNorm) and a ReLU over the first c of every ld floats of
     * src, with the bits of mul, add and leaky_relu(0) in turn. */
    sw_status (*affine_relu_rows)(sw_backend *be, const sw_tensor *src, int64_t ld, int64_t n,
                                  int64_t c, const sw_tensor *scale, const sw_tensor *shift,
                                  sw_tensor *dst, sw_error *err);
    /* y [B, T_out, C], y[b, t, c] = max over k < pool of |span[first[b] + t *
     * pool + k, c] * scale[b] + shift[b * C + c]|: windows of one span scaled,
     * shifted, made magnitudes and max-pooled in one pass, with the bits of
     * scale, add, absolute and max_pool1d(pool, pool) in turn. first, scale and
     * shift are host arrays (B, B and B * C). */
    sw_status (*span_abs_pool)(sw_backend *be, const sw_tensor *span, const int64_t *first,
                               const float *scale, const float *shift, int pool, sw_tensor *y,
                               sw_error *err);

    /* ABI 7: the counters above into *out (when not NULL), then zeroed when
     * `reset`. NULL on a backend without a device of its own (the CPU). */
    void (*counters)(sw_backend *be, sw_backend_counters *out, int reset);
    /* One search step without the logits leaving the device: logits [rows,
     * n] f32; mask [n] int8 bits; rows_plan: device memory, int32, one
     * sw_search_row a row (SW_SEARCH_ROW_WORDS words each), read when the
     * op runs. Row r disables the tokens where mask & mask_bits and those
     * in its ranges, then (check) runs the timestamp check; its scores are
     * then log_softmax + cum (or the masked logits, p->log_softmax 0), in
     * whisper_logits.c's arithmetic. Its p->k best, best first (ties: the
     * lower id), and with no_speech >= 0 the raw row's softmax at
     * no_speech, go to work's end (SW_SEARCH_FOUND_AT above). work: the
     * caller's device scratch, f32, at least SW_SEARCH_WORK(rows, n, k)
     * entries (ABI 9: the caller keeps it across steps). ABI 14: queued,
     * not waited for, nothing copied, so a graph can record it; the caller
     * downloads the results. NULL: the search reads the logits on the host
     * (the CPU). */
    sw_status (*search_step)(sw_backend *be, const sw_tensor *logits, const sw_tensor *mask,
                             const sw_tensor *rows_plan, sw_tensor *work, const sw_search_params *p,
                             sw_error *err);

    /* Frees every byte the backend holds and the backend itself. */
    void (*destroy)(sw_backend *b);

    /* ABI 8: graphs, so a step of many ops costs the host one launch
     * (docs/cuda_backend.md). Between capture_begin and capture_end the ops
     * called on this backend are recorded with their arguments as they are
     * then (pointers, shapes, scalars), not run, and not counted as launches;
     * what they read from device memory is read at each replay, so a value
     * that changes between steps (a length, a position) lives in a device
     * buffer. Nothing may be allocated, freed, uploaded, downloaded or waited
     * for meanwhile: the device refuses it and capture_end then fails, naming
     * the call; every buffer the graph touches must outlive it. capture_end
     * returns the graph (NULL on failure, the capture over either way);
     * graph_launch replays it on the backend's stream (one graph launch in
     * the counters); graph_free frees it (NULL is ignored). All four NULL on
     * a backend without graphs (the CPU): callers run the ops themselves.
     * An op that needs scratch of its own (the CUDA backend's half and int8
     * products) takes it from a workspace the backend keeps while graphs
     * hold it; one the workspace cannot serve inside a capture fails with
     * SW_ERR_NOMEM, and the next capture_begin grows the workspace to it,
     * so the caller captures again (graph_capture.h, sw_capture_graph). */
    sw_status (*capture_begin)(sw_backend *be, sw_error *err);
    sw_status (*capture_end)(sw_backend *be, sw_graph **out, sw_error *err);
    sw_status (*graph_launch)(sw_backend *be, sw_graph *g, sw_error *err);
    void (*graph_free)(sw_backend *be, sw_graph *g);

    /* ABI 12: speaker-embedding features on the device, so that only the
     * audio goes up (docs/cuda_backend.md). Both NULL on a backend whose
     * callers compute features on the host (the CPU: audio/fbank.c), which
     * answers 0 for SW_CAP_FBANK. */

    /* out [frames, mels] = the natural log, floored at FLT_EPSILON, of the
     * filters banks [mels, n_fft / 2 + 1] (f32) applied to the power
     * spectrum of frame t of samples [n] (f32): scaled, less its mean
     * (remove_dc), pre-emphasised (the first sample by itself), windowed,
     * zero-padded to n_fft; in double until the log, as audio/fbank.c, so
     * the answer is the CPU's to float32 rounding. No mean removal. */
    sw_status (*fbank)(sw_backend *be, const sw_tensor *samples, const sw_fbank_params *p,
                       const sw_tensor *banks, sw_tensor *out, sw_error *err);
    /* out [n, C] = table's rows ids[0 .. n - 1] (int32; an id out of range
     * reads zeros), each less the mean of its item's rows: item b is out's
     * rows off[b] .. off[b + 1] - 1 (off: host, batch + 1, rising from 0).
     * The mean is summed in double in row order and subtracted in double,
     * rounded once (numpy's features - features.mean(0, dtype=float64)). */
    sw_status (*gather_centered)(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                 int batch, const int64_t *off, sw_tensor *out, sw_error *err);

    /* ABI 13: conv1d with the columns of its im2col in the caller's `work`
     * (an f32 tensor of at least SW_CONV1D_WORK_BYTES(T_out, C_in, K) bytes,
     * kept as long as a graph that captured the call), so that the Whisper
     * encoder's window allocates nothing and can be one graph; the same
     * kernels and bits as conv1d. NULL on a backend whose conv1d takes no
     * scratch from the pool (the CPU): callers use conv1d. */
    sw_status (*conv1d_work)(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                             const sw_tensor *bias, int stride, int pad, const sw_tensor *work,
                             sw_tensor *out, sw_error *err);

    /* ABI 16: GE2E's features on the device (docs/cuda_backend.md); both
     * NULL on the CPU, which answers 0 for SW_CAP_MEL_POWER. */

    /* out [n / hop, mels] = the filters banks [mels, n_fft / 2 + 1] (f32)
     * applied to the power spectrum of frame t of samples [n] (f32): the
     * n_fft samples centred on sample t * hop, reflected at the span's ends,
     * times a periodic Hann window; in double until the rows are rounded,
     * as audio/mel.c's sw_mel_power, so the answer is the CPU's to float32
     * rounding. No log. n_fft up to 512, any length. */
    sw_status (*mel_power)(sw_backend *be, const sw_tensor *samples, int n_fft, int hop,
                           const sw_tensor *banks, sw_tensor *out, sw_error *err);
    /* out [items, frames, C] (f32): row t of item i is table's row
     * ids[i * frames + t] (int32; an id out of range reads zeros) times
     * scales[i] (f32), a float32 product rounded once. */
    sw_status (*gather_scaled)(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                               const sw_tensor *scales, sw_tensor *out, sw_error *err);
};

/* conv1d_work's columns: T_out rows of C_in * K, 4 bytes each (the most a
 * weight type needs: float32; f16 and bf16 weights use half of it). */
#define SW_CONV1D_WORK_BYTES(t_out, c_in, k) ((size_t)(t_out) * (size_t)(c_in) * (size_t)(k)*4u)

/* Name of the symbol the CUDA library exports, and its type. */
#define SW_CUDA_ENTRY "sw_cuda_backend_open"
/* cublas_path: folders (":"-separated, may be NULL) to look for cuBLAS in, after a
 * copy already loaded in the process and before the system loader's path. */
typedef sw_status (*sw_cuda_open_fn)(int device_index, int abi, const char *cublas_path,
                                     sw_backend **out, sw_error *err);

#ifdef __cplusplus
}
#endif
#endif
