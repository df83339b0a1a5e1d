/* The Whisper network: encoder, decoder with a KV cache, on any backend.
 *
 * The model is built from named host arrays with OpenAI's state-dict names
 * (encoder.conv1.weight, decoder.blocks.0.cross_attn.key.weight, ...); the
 * readers that turn a checkpoint into those names live in Python. Weights are
 * copied to the backend as the compute type wants them (float32, int8 or
 * half; float16 and bfloat16 sources are converted there).
 *
 * Life cycle: a model outlives the audio it encodes, and an audio outlives the
 * decoder states that read it. One thread at a time per backend. */
#ifndef SW_WHISPER_MODEL_H
#define SW_WHISPER_MODEL_H

#include <stdint.h>

#include "backend.h"
#include "named_tensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_whisper_dims {
    int n_mels;
    int n_audio_ctx; /* encoder positions: 1500, so the mel has 2 * 1500 frames */
    int n_audio_state;
    int n_audio_head;
    int n_audio_layer;
    int n_vocab;
    int n_text_ctx; /* decoder positions: 448 */
    int n_text_state;
    int n_text_head;
    int n_text_layer;
} sw_whisper_dims;

typedef struct sw_whisper sw_whisper;
typedef struct sw_whisper_audio sw_whisper_audio;
typedef struct sw_whisper_state sw_whisper_state;

/* How the linear layers compute: float32 weights, or int8 weights quantized
 * per output row at load time (CTranslate2's "int8": activations are
 * quantized per row on each product, everything else stays float32).
 * The half types are the CUDA backend's (docs/half_precision.md): the weight
 * matrices (linear, convolution, token embedding) are float16 or bfloat16 on
 * the device and the products run on tensor cores with float32 sums; with
 * INT8_FLOAT16 the linear layers are int8 as in INT8 and the other matrices
 * float16. Biases, norms and activations stay float32. */
typedef enum sw_whisper_compute {
    SW_WHISPER_FLOAT32 = 0,
    SW_WHISPER_INT8 = 1,
    SW_WHISPER_FLOAT16 = 2,
    SW_WHISPER_BFLOAT16 = 3,
    SW_WHISPER_INT8_FLOAT16 = 4
} sw_whisper_compute;

/* Checks dims, finds every tensor the network needs among `tensors` (others
 * are ignored) and uploads them. A missing or mis-shaped tensor is
 * SW_ERR_MODEL naming it and the shape expected. */
sw_status sw_whisper_create(sw_backend *backend, const sw_whisper_dims *dims,
                            const sw_named_tensor *tensors, int n_tensors,
                            sw_whisper_compute compute, sw_whisper **out, sw_error *err);

/* The same, except that on the CPU with compute float32 the float16 weight
 * matrices (the linear layers and the token embedding, as a CTranslate2
 * file holds them) are not copied: the model computes from them where they
 * lie, so a memory-mapped file loads without writing its 2-3 GB anew. The
 * caller keeps those arrays alive and unchanged until sw_whisper_destroy.
 * The outputs are those of the copied model (bit for bit, except one-row
 * products, see backend_cpu.c). Elsewhere it copies as sw_whisper_create. */
/* Bytes of the caller's arrays the model computes from where they lie
 * (0 for a model that copied everything). They are not the backend pool's:
 * a memory-mapped file's pages, shared with the page cache. */
size_t sw_whisper_borrowed_bytes(const sw_whisper *m);

sw_status sw_whisper_create_borrowing(sw_backend *backend, const sw_whisper_dims *dims,
                                      const sw_named_tensor *tensors, int n_tensors,
                                      sw_whisper_compute compute, sw_whisper **out, sw_error *err);

/* Returns every byte to the backend's pool; NULL is fine. */
void sw_whisper_destroy(sw_whisper *model);

/* The backend was destroyed under the model (its pool already took every
 * block back): from now on destroy functions of the model, its audio and
 * states free host memory only. */
void sw_whisper_backend_lost(sw_whisper *model);

const sw_whisper_dims *sw_whisper_get_dims(const sw_whisper *model);
sw_backend *sw_whisper_backend(const sw_whisper *model);

/* Runs the encoder on mel [batch, n_mels, 2 * n_audio_ctx] (host memory) and
 * precomputes every decoder layer's cross-attention keys and values. */
sw_status sw_whisper_encode(sw_whisper *model, const float *mel, int batch, sw_whisper_audio **out,
                            sw_error *err);

int sw_whisper_audio_batch(const sw_whisper_audio *audio);

/* Item `item` of a batch's encoder output as a batch of one that borrows its
 * memory (no copy, on any backend): the batched mode's word timestamps read
 * each window from the batch's own encoding, as faster-whisper does, instead
 * of encoding it again. Valid while `audio` lives; sw_whisper_audio_free
 * frees the view alone. */
sw_status sw_whisper_audio_item(const sw_whisper_audio *audio, int item, sw_whisper_audio **out,
                                sw_error *err);

/* The encoder output [batch, n_audio_ctx, n_audio_state] on the backend. */
const sw_tensor *sw_whisper_audio_features(const sw_whisper_audio *audio);

void sw_whisper_audio_free(sw_whisper_audio *audio);

/* A decoder state: n_sequences rows of KV cache (n_text_ctx positions each),
 * n_sequences a multiple of the audio batch: sequence s reads audio item
 * s / (n_sequences / batch), so the beams of one audio are adjacent. */
sw_status sw_whisper_state_new(sw_whisper *model, const sw_whisper_audio *audio, int n_sequences,
                               sw_whisper_state **out, sw_error *err);

void sw_whisper_state_free(sw_whisper_state *state);

/* Tokens already in the cache. */
int sw_whisper_state_length(const sw_whisper_state *state);

/* Forgets the cache (length 0); the memory stays. */
void sw_whisper_state_reset(sw_whisper_state *state);

/* Feeds tokens [n_seq, n_tokens] (row-major, host) at positions length ..
 * length + n_tokens - 1, appends them to the cache, and writes the logits of
 * the last position of each sequence to logits_out [n_seq, n_vocab] (host).
 * The first call usually feeds the prompt, later calls one token each. */
sw_status sw_whisper_decode(sw_whisper_state *state, const int32_t *tokens, int n_seq, int n_tokens,
                            float *logits_out, sw_error *err);

/* Beam search: sequence s continues the cache of sequence src_index[s], for
 * s < n (n == n_sequences); indices may repeat. */
sw_status sw_whisper_state_reorder(sw_whisper_state *state, const int *src_index, int n,
                                   sw_error *err);

/* Sequence s of dst continues the cache of sequence src_index[s] of src, for
 * s < n (n == dst's sequences; indices may repeat); dst's length becomes
 * src's. Both read the same audio; src may be dst (that is a reorder). A
 * prompt fed once to a one-sequence state and copied to the beams spares
 * feeding it to every beam. */
sw_status sw_whisper_state_copy(sw_whisper_state *dst, const sw_whisper_state *src,
                                const int *src_index, int n, sw_error *err);

/* Word timestamps hook: when on, each decode keeps the cross-attention
 * weights of every layer, [n_seq, n_text_head, n_tokens, n_audio_ctx] per
 * layer, until the next decode. */
void sw_whisper_state_capture_cross_attention(sw_whisper_state *state, int on);

/* The weights kept by the last decode for `layer`, or NULL (capture off,
 * no decode yet, layer out of range). */
const sw_tensor *sw_whisper_state_cross_attention(const sw_whisper_state *state, int layer);

#ifdef __cplusplus
}
#endif
#endif
