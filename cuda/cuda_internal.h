/* State and helpers shared by the .cu files of the CUDA backend; nothing here
 * is visible outside libsaywho_cuda.so. */
#ifndef SW_CUDA_INTERNAL_H
#define SW_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <stdint.h>

/* The two spellings that differ between nvcc and the CPU emulator
 * (cuda/emu/sw_emu.h, which the emulated build finds as <cuda_runtime.h>):
 * a launch, SW_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...),
 * and shared memory, which the emulator gives each block fresh. */
#ifdef SW_CUDA_EMULATION
#define SW_LAUNCH(kernel, grid, block, shared, stream)                                             \
    sw_emu_launcher(#kernel, kernel, grid, block, shared, stream)
#define SW_SHARED(type, name, count)  SW_EMU_SHARED(type, name, count)
#define SW_DYNAMIC_SHARED(type, name) SW_EMU_DYNAMIC_SHARED(type, name)
#else
#define SW_LAUNCH(kernel, grid, block, shared, stream) kernel<<<grid, block, shared, stream>>>
#define SW_SHARED(type, name, count)                   __shared__ type name[count]
#define SW_DYNAMIC_SHARED(type, name)                  extern __shared__ type name[]
#endif

#include "backend.h"
#include "cublas_loader.h"

/* workspace.cu: the products' scratch while graphs hold it */
typedef struct sw_cuda_workspace sw_cuda_workspace;

typedef struct sw_cuda {
    int device;
    cudaStream_t stream;
    sw_pool *pool;
    const sw_cublas_api *blas;
    sw_cublas_handle blas_handle;
    int max_grid; /* blocks for grid-stride kernels: enough to fill the GPU */
    /* SAYWHO_CUDA_SYNC=1 (and always in the emulator): each launch is waited
     * for, so a kernel that faults is reported at its own launch */
    int sync_launches;
    /* the step budget's figures (backend.h); sync_launches' own waits are a
     * debugging aid and not counted, so the emulator counts what a GPU does */
    sw_backend_counters counted;
    /* a graph capture is open on `stream` (graphs.cu): ops are recorded, not
     * launched, so they are neither counted nor waited for */
    int capturing;
    /* The products' workspace (workspace.cu): the block, the largest scratch
     * a capture asked of it, and whether the open capture took from it. */
    sw_cuda_workspace *ws;
    size_t ws_wanted;
    int ws_used;
    /* Uploads are staged (backend_cuda.cu): pinned host memory the caller's
     * bytes are copied into, the copy to the device queued without a wait.
     * staging_used: bytes handed out since the stream was last waited for
     * (every part of it may still be read by a queued copy); staging_off:
     * pinned memory was refused, uploads wait as before. */
    unsigned char *staging;
    size_t staging_used;
    int staging_off;
} sw_cuda;

static inline sw_cuda *sw_cuda_of(sw_backend *b)
{
    return (sw_cuda *)b->impl;
}

/* Turns a CUDA error into SW_ERR_DEVICE with what it means for the user. */
sw_status sw_cuda_fail(sw_error *err, cudaError_t e, const char *what);

/* Every entry point starts here: the caller may be any thread, and a CUDA
 * thread's current device defaults to 0 whatever device this backend uses. */
sw_status sw_cuda_enter(sw_cuda *c, sw_error *err);

/* The start of an op over `count` elements (or bytes): 1 when there is work
 * and the device is entered; else 0 with *st what the op returns, SW_OK for
 * no work (nothing is launched, not even sw_cuda_enter) or enter's failure. */
static inline int sw_cuda_enter_work(sw_cuda *c, int64_t count, sw_status *st, sw_error *err)
{
    *st = count == 0 ? SW_OK : sw_cuda_enter(c, err);
    return count != 0 && *st == SW_OK;
}

/* Checks the launch just made; a bad launch is reported now, not at the next
 * unrelated call that happens to see the sticky error. With sync_launches it
 * also waits for the kernel, so a fault inside it names this kernel. */
sw_status sw_cuda_check_launch(sw_cuda *c, sw_error *err, const char *kernel);

/* One more operation queued on the stream that sw_cuda_check_launch does not
 * see: a cuBLAS call, a device-to-device copy. */
static inline void sw_cuda_count_launch(sw_cuda *c)
{
    if (!c->capturing)
        c->counted.launches++;
}

/* Shapes come from sw_tensor but sw_tensor_numel lives in the core, which this
 * library does not link. */
static inline int64_t sw_cuda_numel(const sw_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

static inline int64_t sw_cuda_last_dim(const sw_tensor *t)
{
    return t->ndim > 0 ? t->shape[t->ndim - 1] : 1;
}

/* Grid for n elements: one thread each up to max_grid blocks, then the
 * kernels loop, so huge tensors never exceed the launch limits. */
static inline unsigned sw_cuda_grid(const sw_cuda *c, int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks < 1)
        blocks = 1;
    return (unsigned)(blocks < c->max_grid ? blocks : c->max_grid);
}

#define SW_CUDA_THREADS 256

/* An attention's key count and causal offset once a device length
 * (sw_attention_params.length, ABI 10) is added, read when the kernel runs:
 * the same step's graph replays at every length. The keys stop at the
 * tensor's rows whatever the length says. */
__device__ __forceinline__ void sw_cuda_device_length(const int32_t *length, int64_t rows,
                                                      int64_t *kv_len, int64_t *causal)
{
    if (!length)
        return;
    int64_t n = *kv_len + *length;
    *kv_len = n < rows ? n : rows;
    if (*causal >= 0)
        *causal += *length;
}

sw_status sw_cuda_add(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                      sw_error *err);
sw_status sw_cuda_mul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                      sw_error *err);
sw_status sw_cuda_scale(sw_backend *be, const sw_tensor *a, float s, sw_tensor *out, sw_error *err);
sw_status sw_cuda_gelu(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_convert(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_layernorm(sw_backend *be, const sw_tensor *a, const sw_tensor *gamma,
                            const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err);
sw_status sw_cuda_matmul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                         int trans_b, float alpha, float beta, sw_error *err);

/* A product's scratch of `bytes` (workspace.cu): the backend's workspace
 * where it is large enough (always inside a capture, which fails with
 * SW_ERR_NOMEM otherwise and leaves the size for the next capture_begin),
 * else a pool block; give it back with sw_cuda_scratch_done (stream order:
 * at once, after the launches that use it are queued). */
void *sw_cuda_scratch(sw_backend *be, size_t bytes, sw_error *err);
void sw_cuda_scratch_done(sw_backend *be, void *p);
/* capture_begin, before the capture starts: the workspace grown to what the
 * captures asked so far. */
sw_status sw_cuda_workspace_grow(sw_backend *be, sw_error *err);
/* capture_end: the workspace the new graph holds a reference on (kept: a
 * graph was made; NULL when the capture took nothing from it), and a block
 * no graph holds goes back to the pool. */
sw_cuda_workspace *sw_cuda_workspace_capture_over(sw_backend *be, int kept);
/* graph_free: the graph's reference; the last one returns the block. */
void sw_cuda_workspace_release(sw_backend *be, sw_cuda_workspace *ws);
/* cuda_destroy: the host side (the pool frees the device memory). */
void sw_cuda_workspace_destroy(sw_cuda *c);

/* Half precision (matmul_half.cu): b float16 or bfloat16, c float32. */
int sw_cuda_is_half(sw_dtype d);
sw_status sw_cuda_matmul_half(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                              int trans_b, float alpha, float beta, int64_t m, int64_t n, int64_t k,
                              sw_error *err);
/* out[i] = a[i] rounded to `to` (SW_F16 or SW_BF16) as the hardware rounds. */
sw_status sw_cuda_narrow(sw_backend *be, const float *a, sw_dtype to, void *out, int64_t n,
                         sw_error *err);

sw_status sw_cuda_transpose(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_conv1d(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                         const sw_tensor *bias, int stride, int pad, sw_tensor *out, sw_error *err);
sw_status sw_cuda_conv1d_work(sw_backend *be, const sw_tensor *x, const sw_tensor *w,
                              const sw_tensor *bias, int stride, int pad, const sw_tensor *work,
                              sw_tensor *out, sw_error *err);
sw_status sw_cuda_gather_rows(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                              sw_tensor *out, sw_error *err);
sw_status sw_cuda_scatter_rows(sw_backend *be, const sw_tensor *src, const sw_tensor *ids,
                               sw_tensor *dst, sw_error *err);
sw_status sw_cuda_attention(sw_backend *be, const sw_tensor *q, const sw_tensor *k,
                            const sw_tensor *v, const sw_attention_params *p, sw_tensor *out,
                            sw_tensor *probs, sw_error *err);
/* attention.cu: the tiled kernel for many query rows, and the shapes it takes
 * (the rest run norm_softmax.cu's one block a row). */
int sw_cuda_attention_tiled_fits(int64_t tq, int64_t dh, int with_probs);
sw_status sw_cuda_attention_tiled(sw_cuda *c, const float *q, const float *k, const float *v,
                                  float *out, int64_t batch, int64_t tq, int64_t d, int64_t dh,
                                  int64_t tkv, int64_t group, const sw_attention_params *p,
                                  sw_error *err);

sw_status sw_cuda_leaky_relu(sw_backend *be, const sw_tensor *a, float alpha, sw_tensor *out,
                             sw_error *err);
sw_status sw_cuda_abs(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_max_pool1d(sw_backend *be, const sw_tensor *x, int kernel, int stride,
                             sw_tensor *out, sw_error *err);
sw_status sw_cuda_instance_norm(sw_backend *be, const sw_tensor *x, const sw_tensor *gamma,
                                const sw_tensor *beta, float eps, sw_tensor *out, sw_error *err);
sw_status sw_cuda_log_softmax(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_matmul_q8(sw_backend *be, const sw_tensor *a, const sw_tensor *w,
                            const sw_tensor *w_scale, const sw_tensor *w_sum, sw_tensor *c,
                            float beta, sw_error *err);
sw_status sw_cuda_lstm(sw_backend *be, const sw_tensor *x, const sw_tensor *w_ih,
                       const sw_tensor *w_hh, const sw_tensor *bias, sw_tensor *state,
                       sw_tensor *out, sw_error *err);

/* pooling.cu: the embeddings' and the VAD's last steps (ABI 5) */
sw_status sw_cuda_stats_pool(sw_backend *be, const sw_tensor *x, const sw_tensor *w, double eps,
                             sw_tensor *out, sw_error *err);
sw_status sw_cuda_magnitude(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err);
sw_status sw_cuda_l2_normalize(sw_backend *be, const sw_tensor *a, float eps, sw_tensor *out,
                               sw_error *err);

/* fused.cu: the fused entries of ABI 6 (CAM++'s and segmentation's) */
sw_status sw_cuda_prepare_linear(sw_backend *be, sw_tensor *w, sw_weight_layout *layout,
                                 sw_error *err);
sw_status sw_cuda_gather_linear(sw_backend *be, const sw_tensor *x, const sw_tensor *ids, int taps,
                                const sw_tensor *w, sw_weight_layout layout, const sw_tensor *bias,
                                int relu, int64_t block, sw_tensor *y, sw_error *err);
sw_status sw_cuda_prepare_conv3x3(sw_backend *be, const sw_tensor *w, sw_weight_layout layout,
                                  int stride, sw_tensor *u, sw_error *err);
sw_status sw_cuda_conv3x3(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                          const int64_t *off, const sw_tensor *u, int stride, const sw_tensor *bias,
                          const sw_tensor *add, int relu, sw_tensor *y, sw_error *err);
sw_status sw_cuda_conv3x3_single(sw_backend *be, const sw_tensor *x, int64_t h, int batch,
                                 const int64_t *off, const sw_tensor *w, const sw_tensor *bias,
                                 int relu, sw_tensor *y, sw_error *err);
sw_status sw_cuda_affine_relu_rows(sw_backend *be, const sw_tensor *src, int64_t ld, int64_t n,
                                   int64_t c, const sw_tensor *scale, const sw_tensor *shift,
                                   sw_tensor *dst, sw_error *err);
sw_status sw_cuda_span_abs_pool(sw_backend *be, const sw_tensor *span, const int64_t *first,
                                const float *scale, const float *shift, int pool, sw_tensor *y,
                                sw_error *err);

/* features.cu: speaker-embedding features on the device (ABI 12) */
sw_status sw_cuda_fbank(sw_backend *be, const sw_tensor *samples, const sw_fbank_params *p,
                        const sw_tensor *banks, sw_tensor *out, sw_error *err);
sw_status sw_cuda_gather_centered(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                  int batch, const int64_t *off, sw_tensor *out, sw_error *err);

/* mel_power.cu: GE2E's features on the device (ABI 16) */
sw_status sw_cuda_mel_power(sw_backend *be, const sw_tensor *samples, int n_fft, int hop,
                            const sw_tensor *banks, sw_tensor *out, sw_error *err);
sw_status sw_cuda_gather_scaled(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                                const sw_tensor *scales, sw_tensor *out, sw_error *err);

/* search_step.cu: a step of Whisper's token search (ABI 7; work: ABI 9;
 * the rows read from device memory, nothing copied: ABI 14) */
sw_status sw_cuda_search_step(sw_backend *be, const sw_tensor *logits, const sw_tensor *mask,
                              const sw_tensor *rows_plan, sw_tensor *work,
                              const sw_search_params *p, sw_error *err);

/* Launches one tiny kernel and waits: the first place a GPU with no code in
 * this library ("no kernel image") shows itself. */
cudaError_t sw_cuda_probe_kernel(cudaStream_t stream);

/* CUDA graphs (graphs.cu): the table's capture_begin .. graph_free. */
sw_status sw_cuda_capture_begin(sw_backend *be, sw_error *err);
sw_status sw_cuda_capture_end(sw_backend *be, sw_graph **out, sw_error *err);
sw_status sw_cuda_graph_launch(sw_backend *be, sw_graph *g, sw_error *err);
void sw_cuda_graph_free(sw_backend *be, sw_graph *g);

#endif
