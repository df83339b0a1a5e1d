/* The CUDA backend's table, its memory and its life cycle. Ops live in
 * elementwise.cu, norm_softmax.cu and matmul.cu. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "cuda_internal.h"

/* Device memory comes from cudaMalloc through the same counted pool the CPU
 * uses, so Pipeline.memory() means the same on both and destroy frees all. */
#ifdef SW_CUDA_EMULATION
/* emu_runtime.cpp: the exact size of the next cudaMalloc (see cuda_alloc) */
extern "C" __attribute__((visibility("hidden"))) void sw_emu_expect_alloc(size_t bytes);
#endif

static void *raw_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        /* Out of memory is not sticky: clear it so the pool's retry and the
         * next launch check do not report it again. */
        (void)cudaGetLastError();
        return NULL;
    }
    return p;
}

static void raw_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
}

static void *cuda_alloc(sw_backend *b, size_t bytes, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(b);
    if (sw_cuda_enter(c, err) != SW_OK)
        return NULL;
    if (c->capturing) { /* a graph would keep a pointer to memory it does not own */
        sw_fail(err, SW_ERR_ARG,
                "allocating %zu bytes inside a CUDA graph capture: allocate the step's buffers "
                "before capture_begin",
                bytes);
        return NULL;
    }
#ifdef SW_CUDA_EMULATION
    /* The emulator's blocks end where the tensor does, so AddressSanitizer
     * sees a kernel read one element past it; the pool still counts its size
     * classes, as on a GPU. */
    sw_emu_expect_alloc(bytes);
#endif
    void *p = sw_pool_alloc(c->pool, bytes);
    if (!p) {
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
            (void)cudaGetLastError();
        sw_pool_stats s = sw_pool_get_stats(c->pool);
        sw_fail(err, SW_ERR_NOMEM,
                "GPU out of memory: %zu MiB asked, %zu MiB free of %zu MiB, saywho holds "
                "%zu MiB; free other models on this GPU (torch.cuda.empty_cache()) or use a "
                "smaller model",
                bytes >> 20, free_b >> 20, total_b >> 20, s.reserved >> 20);
    }
    return p;
}

static void cuda_free(sw_backend *b, void *ptr)
{
    if (!ptr)
        return;
    sw_cuda *c = sw_cuda_of(b);
    sw_error ignored = {SW_OK, {0}};
    /* Stream order makes reuse safe: the next op that gets this block runs on
     * the same stream after every op that used it. */
    if (sw_cuda_enter(c, &ignored) == SW_OK)
        sw_pool_free(c->pool, ptr);
#ifdef SW_CUDA_EMULATION
    /* nothing cached: every block is fresh (NaN, exact size), and a use after
     * free is an AddressSanitizer report (not inside a graph capture, where
     * cudaFree is refused; the next free outside it returns the block) */
    if (!c->capturing)
        sw_pool_trim(c->pool);
#endif
}

static sw_pool_stats cuda_memory(sw_backend *b)
{
    return sw_pool_get_stats(sw_cuda_of(b)->pool);
}

static void cuda_trim(sw_backend *b)
{
    sw_cuda *c = sw_cuda_of(b);
    sw_error ignored = {SW_OK, {0}};
    if (sw_cuda_enter(c, &ignored) == SW_OK && !c->capturing)
        sw_pool_trim(c->pool); /* cudaFree waits for the GPU itself, refused in a capture */
}

static sw_status cuda_device_info(sw_backend *b, sw_device_info *info, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(b);
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    memset(info, 0, sizeof *info);
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, c->device);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "reading the GPU's properties");
    /* GPU names are short; the 128 of sw_device_info is plenty. */
    snprintf(info->name, sizeof info->name, "%.127s", prop.name);
    info->compute_major = prop.major;
    info->compute_minor = prop.minor;
    e = cudaMemGetInfo(&info->free_bytes, &info->total_bytes);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "reading the GPU's free memory");
    return SW_OK;
}

/* Pinned staging for uploads (issue 38): 64 MiB, taken at the first upload.
 * A batch's inputs (segmentation's span, GE2E's mels, CAM++'s features and
 * index tables) fit many times over; a larger upload waits as before. */
#define SW_CUDA_STAGING_BYTES ((size_t)64 << 20)

/* The host waited for the stream: every queued copy has read its staging. */
static void stream_drained(sw_cuda *c)
{
    c->counted.host_syncs++;
    c->staging_used = 0;
}

/* A download waits for the stream: the caller reads the result next. */
static sw_status download_waiting(sw_backend *b, void *dst, const void *src, size_t bytes,
                                  sw_error *err)
{
    sw_cuda *c = sw_cuda_of(b);
    sw_status st;
    if (!sw_cuda_enter_work(c, bytes, &st, err))
        return st;
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(c->stream);
    c->counted.bytes_down += bytes;
    stream_drained(c);
    return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "copying from the GPU");
}

/* Room for `bytes` in the staging memory, or NULL (too large, or no pinned
 * memory): when the rest of it is too small the host waits for the stream
 * once, after which all of it is free again. */
static unsigned char *staging_slot(sw_cuda *c, size_t bytes, cudaError_t *e)
{
    /* inside a graph capture the waiting copy below is what it always was,
     * refused by the device (a graph would replay a copy of whatever the
     * staging memory then held) */
    if (c->staging_off || bytes > SW_CUDA_STAGING_BYTES || c->capturing)
        return NULL;
    if (!c->staging) {
        void *p = NULL;
        if (cudaMallocHost(&p, SW_CUDA_STAGING_BYTES) != cudaSuccess) {
            (void)cudaGetLastError(); /* not sticky: uploads then wait, as before */
            c->staging_off = 1;
            return NULL;
        }
        c->staging = (unsigned char *)p;
    }
    if (SW_CUDA_STAGING_BYTES - c->staging_used < bytes) {
        *e = cudaStreamSynchronize(c->stream);
        stream_drained(c);
    }
    unsigned char *slot = c->staging + c->staging_used;
    c->staging_used += (bytes + 255) / 256 * 256; /* each slot 256-byte aligned */
    if (c->staging_used > SW_CUDA_STAGING_BYTES)
        c->staging_used = SW_CUDA_STAGING_BYTES;
    return slot;
}

/* An upload returns once the caller's bytes are copied into the staging
 * memory, the copy to the device queued behind the stream's work, so the
 * caller may free or reuse its buffer at once and the host does not wait
 * for the device: a batch's inputs go up without a host synchronisation.
 * Without staging (too large, no pinned memory) it waits for the stream:
 * a pageable async copy is not guaranteed to have read the buffer. */
static sw_status cuda_upload(sw_backend *b, void *dst, const void *host_src, size_t bytes,
                             sw_error *err)
{
    sw_cuda *c = sw_cuda_of(b);
    sw_status st;
    if (!sw_cuda_enter_work(c, bytes, &st, err))
        return st;
    cudaError_t e = cudaSuccess;
    unsigned char *slot = staging_slot(c, bytes, &e);
    c->counted.bytes_up += bytes;
    if (slot && e == cudaSuccess) {
        memcpy(slot, host_src, bytes);
        e = cudaMemcpyAsync(dst, slot, bytes, cudaMemcpyHostToDevice, c->stream);
    } else if (e == cudaSuccess) {
        e = cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, c->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(c->stream);
        stream_drained(c);
    }
    return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "copying to the GPU");
}

static sw_status cuda_download(sw_backend *b, void *host_dst, const void *src, size_t bytes,
                               sw_error *err)
{
    return download_waiting(b, host_dst, src, bytes, err);
}

static sw_status cuda_synchronize(sw_backend *b, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(b);
    sw_status st = sw_cuda_enter(c, err);
    if (st != SW_OK)
        return st;
    cudaError_t e = cudaStreamSynchronize(c->stream);
    stream_drained(c);
    return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "waiting for the GPU");
}

static void cuda_counters(sw_backend *b, sw_backend_counters *out, int reset)
{
    sw_cuda *c = sw_cuda_of(b);
    if (out)
        *out = c->counted;
    if (reset)
        memset(&c->counted, 0, sizeof c->counted);
}

/* Also undoes a half-finished open. Never cudaDeviceReset: the primary
 * context is shared with torch and anything else in the process. */
static void cuda_destroy(sw_backend *b)
{
    if (!b)
        return;
    sw_cuda *c = sw_cuda_of(b);
    if (c) {
        if (c->capturing) { /* an unfinished capture: nothing of it is kept */
            cudaGraph_t g = NULL;
            if (cudaStreamEndCapture(c->stream, &g) == cudaSuccess && g)
                (void)cudaGraphDestroy(g);
            c->capturing = 0;
        }
        if (cudaSetDevice(c->device) == cudaSuccess && c->stream)
            (void)cudaStreamSynchronize(c->stream);
        if (c->blas_handle)
            c->blas->destroy(c->blas_handle);
        sw_cuda_workspace_destroy(c);
        sw_pool_destroy(c->pool);
        if (c->staging)
            (void)cudaFreeHost(c->staging); /* the stream was waited for above */
        if (c->stream)
            (void)cudaStreamDestroy(c->stream);
        (void)cudaGetLastError();
        free(c);
    }
    free(b);
}

static sw_status open_cublas(sw_cuda *c, const char *cublas_path, sw_error *err)
{
    c->blas = sw_cublas_load(cublas_path, err);
    if (!c->blas)
        return SW_ERR_DEVICE;
    int st = c->blas->create(&c->blas_handle);
    if (st != SW_CUBLAS_STATUS_SUCCESS) {
        c->blas_handle = NULL;
        return sw_fail(err, SW_ERR_DEVICE, "cuBLAS from %s could not start: %s", c->blas->path,
                       sw_cublas_status_name(st));
    }
    st = c->blas->set_stream(c->blas_handle, c->stream);
    if (st != SW_CUBLAS_STATUS_SUCCESS)
        return sw_fail(err, SW_ERR_DEVICE, "cuBLAS refused saywho's stream: %s",
                       sw_cublas_status_name(st));
    return SW_OK;
}

static sw_status open_device(sw_cuda *c, int device_index, sw_error *err)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "CUDA is not usable");
    if (count == 0)
        return sw_cuda_fail(err, cudaErrorNoDevice, "CUDA is not usable");
    if (device_index < 0 || device_index >= count)
        return sw_fail(err, SW_ERR_DEVICE,
                       "GPU %d was asked for but %d GPU%s visible (indices 0 to %d); see "
                       "nvidia-smi and CUDA_VISIBLE_DEVICES",
                       device_index, count, count == 1 ? " is" : "s are", count - 1);
    c->device = device_index;
    e = cudaSetDevice(device_index);
    int major = 0, sms = 0;
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_index);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_index);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "cannot open the GPU");
    /* Pascal (P100, Kaggle) runs where the build has code for it (the
     * portable wheel's CUDA 12.4 does; CUDA 13 has none): the test kernel
     * launched below says so otherwise */
    if (major < 6)
        return sw_fail(err, SW_ERR_DEVICE,
                       "GPU %d has compute capability %d.x; saywho needs 6.0 (P100, Pascal) or "
                       "newer, use device=\"cpu\"",
                       device_index, major);
    c->max_grid = sms * 16;
#ifdef SW_CUDA_EMULATION
    c->sync_launches = 1; /* launches run to the end before they return anyway */
#else
    const char *sync = getenv("SAYWHO_CUDA_SYNC");
    c->sync_launches = sync && *sync && strcmp(sync, "0") != 0;
#endif
    /* Non-blocking: saywho's work must not wait on, or hold up, work that torch
     * queues on the legacy default stream. */
    e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "cannot create a CUDA stream");
    e = sw_cuda_probe_kernel(c->stream);
    if (e != cudaSuccess)
        return sw_cuda_fail(err, e, "cannot run saywho's GPU code");
    return SW_OK;
}

/* What this backend does beyond every backend's ops: f16 and bf16 weights
 * in every product (tensor cores), the token search's step (search_step),
 * attention at a length read from device memory (graphs replay it), and the
 * fused entries CAM++ and segmentation call (fused.cu), for any channel
 * counts, and the embeddings' features from the audio (features.cu). Its int8
 * weights are the core's row-major ones (prepare_q8 NULL, fused_ops.c). */
static int cuda_supports(sw_backend *, sw_capability cap, int64_t a, int64_t b)
{
    switch (cap) {
    case SW_CAP_HALF_WEIGHTS:
    case SW_CAP_DEVICE_LENGTH:
    case SW_CAP_AFFINE_RELU_ROWS:
    case SW_CAP_SPAN_ABS_POOL:
    case SW_CAP_FBANK:
    case SW_CAP_SEARCH_SAMPLE:
    case SW_CAP_MEL_POWER: return 1;
    case SW_CAP_SEARCH_STEP: return a >= 1 && a <= SW_SEARCH_MAX_K;
    case SW_CAP_GATHER_LINEAR: return b >= 1;
    case SW_CAP_CONV3X3: return a >= 1 && b >= 1;
    case SW_CAP_CONV3X3_SINGLE: return a == 1 && b >= 1;
    default: return 0;
    }
}

static const sw_backend table = {
    .abi = SW_BACKEND_ABI,
    .kind = SW_DEVICE_CUDA,
    .name = "cuda",
    .impl = NULL,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .memory = cuda_memory,
    .trim = cuda_trim,
    .device_info = cuda_device_info,
    .upload = cuda_upload,
    .download = cuda_download,
    .synchronize = cuda_synchronize,
    .matmul = sw_cuda_matmul,
    .add = sw_cuda_add,
    .mul = sw_cuda_mul,
    .scale = sw_cuda_scale,
    .gelu = sw_cuda_gelu,
    .softmax = sw_cuda_softmax,
    .layernorm = sw_cuda_layernorm,
    .convert = sw_cuda_convert,
    .transpose = sw_cuda_transpose,
    .conv1d = sw_cuda_conv1d,
    .gather_rows = sw_cuda_gather_rows,
    .scatter_rows = sw_cuda_scatter_rows,
    .attention = sw_cuda_attention,
    .leaky_relu = sw_cuda_leaky_relu,
    .absolute = sw_cuda_abs,
    .max_pool1d = sw_cuda_max_pool1d,
    .instance_norm = sw_cuda_instance_norm,
    .log_softmax = sw_cuda_log_softmax,
    .lstm = sw_cuda_lstm,
    .matmul_q8 = sw_cuda_matmul_q8,
    .stats_pool = sw_cuda_stats_pool,
    .magnitude = sw_cuda_magnitude,
    .l2_normalize = sw_cuda_l2_normalize,
    .supports = cuda_supports,
    .prepare_linear = sw_cuda_prepare_linear,
    .prepare_q8 = NULL,
    .gather_linear = sw_cuda_gather_linear,
    .prepare_conv3x3 = sw_cuda_prepare_conv3x3,
    .conv3x3 = sw_cuda_conv3x3,
    .conv3x3_single = sw_cuda_conv3x3_single,
    .affine_relu_rows = sw_cuda_affine_relu_rows,
    .span_abs_pool = sw_cuda_span_abs_pool,
    .counters = cuda_counters,
    .search_step = sw_cuda_search_step,
    .destroy = cuda_destroy,
    .capture_begin = sw_cuda_capture_begin,
    .capture_end = sw_cuda_capture_end,
    .graph_launch = sw_cuda_graph_launch,
    .graph_free = sw_cuda_graph_free,
    .fbank = sw_cuda_fbank,
    .gather_centered = sw_cuda_gather_centered,
    .conv1d_work = sw_cuda_conv1d_work,
    .mel_power = sw_cuda_mel_power,
    .gather_scaled = sw_cuda_gather_scaled,
};

extern "C" __attribute__((visibility("default"))) sw_status
sw_cuda_backend_open(int device_index, int abi, const char *cublas_path, sw_backend **out,
                     sw_error *err)
{
    if (!out)
        return sw_fail(err, SW_ERR_ARG, "sw_cuda_backend_open: out is NULL");
    *out = NULL;
    if (abi != SW_BACKEND_ABI)
        return sw_fail(err, SW_ERR_DEVICE,
                       "libsaywho_cuda.so implements backend ABI %d but the core asks for %d: "
                       "the two come from different saywho builds; reinstall saywho",
                       SW_BACKEND_ABI, abi);

    sw_backend *b = (sw_backend *)malloc(sizeof *b);
    sw_cuda *c = (sw_cuda *)calloc(1, sizeof *c);
    if (!b || !c) {
        free(b);
        free(c);
        return sw_fail(err, SW_ERR_NOMEM, "out of host memory opening the GPU backend");
    }
    *b = table;
    b->impl = c;

    sw_status st = open_device(c, device_index, err);
    if (st == SW_OK) {
        sw_raw_allocator raw = {raw_alloc, raw_free, c};
        c->pool = sw_pool_create("cuda", raw, 256);
        if (!c->pool)
            st = sw_fail(err, SW_ERR_NOMEM, "out of host memory creating the GPU pool");
    }
    /* cuBLAS now rather than at the first matmul: device="auto" can still fall
     * back to the CPU, and a transcription never fails half way for it. */
    if (st == SW_OK)
        st = open_cublas(c, cublas_path, err);
    if (st != SW_OK) {
        cuda_destroy(b);
        return st;
    }
    *out = b;
    return SW_OK;
}

/* The core calls the entry through sw_cuda_open_fn: keep the two in step. */
static_assert(std::is_same<decltype(&sw_cuda_backend_open), sw_cuda_open_fn>::value,
              "sw_cuda_backend_open must have the type sw_cuda_open_fn");
