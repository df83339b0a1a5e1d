/* Element-wise ops. The arithmetic is elementwise_math.h's, shared with the
 * CPU backend, so the CPU tests check what the GPU computes. */
#include "cuda_internal.h"
#include "elementwise_math.h"
#include "half_convert.h"

enum { OP_ADD, OP_MUL };

/* bn == n: same shape; otherwise b (a row, or a block of a's trailing
 * dimensions) repeats along a every bn elements. */
__global__ void binary_f32(const float *a, const float *b, float *out, int64_t n, int64_t bn,
                           int op)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float y = b[bn == n ? i : i % bn];
        out[i] = op == OP_ADD ? a[i] + y : a[i] * y;
    }
}

__global__ void scale_f32(const float *a, float s, float *out, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = a[i] * s;
}

__global__ void gelu_f32(const float *a, float *out, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = sw_gelu_f(a[i]);
}

__device__ __forceinline__ float load_as_f32(const void *p, int dtype, int64_t i)
{
    switch (dtype) {
    case SW_F16: return sw_f16_to_f32(((const uint16_t *)p)[i]);
    case SW_BF16: return sw_bf16_to_f32(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

__device__ __forceinline__ void store_from_f32(void *p, int dtype, int64_t i, float v)
{
    switch (dtype) {
    case SW_F16: ((uint16_t *)p)[i] = sw_f32_to_f16(v); break;
    case SW_BF16: ((uint16_t *)p)[i] = sw_f32_to_bf16(v); break;
    default: ((float *)p)[i] = v; break;
    }
}

/* Every pair goes through f32, which holds f16 and bf16 exactly, so f16 <->
 * bf16 rounds once, as on the CPU. The dtype branch is the same for every
 * thread, so it costs no divergence. */
__global__ void convert_kernel(const void *src, int src_dtype, void *dst, int dst_dtype, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        store_from_f32(dst, dst_dtype, i, load_as_f32(src, src_dtype, i));
}

__global__ void probe_kernel(void)
{
}

cudaError_t sw_cuda_probe_kernel(cudaStream_t stream)
{
    SW_LAUNCH(probe_kernel, 1, 1, 0, stream)();
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? cudaStreamSynchronize(stream) : e;
}

static sw_status need_f32(const sw_tensor *t, const char *op, const char *name, sw_error *err)
{
    if (t->dtype == SW_F32)
        return SW_OK;
    return sw_fail(err, SW_ERR_ARG, "cuda %s: %s must be f32", op, name);
}

static sw_status binary(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                        int op, const char *name, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a), bn = sw_cuda_numel(b);
    if (need_f32(a, name, "a", err) || need_f32(b, name, "b", err) ||
        need_f32(out, name, "out", err))
        return SW_ERR_ARG;
    if (sw_cuda_numel(out) != n || !(bn == n || (bn > 0 && n % bn == 0)))
        return sw_fail(err, SW_ERR_ARG, "cuda %s: b must match a or repeat along it", name);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(binary_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (const float *)b->data, (float *)out->data, n, bn, op);
    return sw_cuda_check_launch(c, err, name);
}

sw_status sw_cuda_add(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                      sw_error *err)
{
    return binary(be, a, b, out, OP_ADD, "add", err);
}

sw_status sw_cuda_mul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *out,
                      sw_error *err)
{
    return binary(be, a, b, out, OP_MUL, "mul", err);
}

sw_status sw_cuda_scale(sw_backend *be, const sw_tensor *a, float s, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a);
    if (need_f32(a, "scale", "a", err) || need_f32(out, "scale", "out", err))
        return SW_ERR_ARG;
    if (sw_cuda_numel(out) != n)
        return sw_fail(err, SW_ERR_ARG, "cuda scale: out must have a's size");
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(scale_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, s, (float *)out->data, n);
    return sw_cuda_check_launch(c, err, "scale");
}

sw_status sw_cuda_gelu(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a);
    if (need_f32(a, "gelu", "a", err) || need_f32(out, "gelu", "out", err))
        return SW_ERR_ARG;
    if (sw_cuda_numel(out) != n)
        return sw_fail(err, SW_ERR_ARG, "cuda gelu: out must have a's size");
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(gelu_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (float *)out->data, n);
    return sw_cuda_check_launch(c, err, "gelu");
}

static int is_float_dtype(sw_dtype d)
{
    return d == SW_F32 || d == SW_F16 || d == SW_BF16;
}

static size_t float_dtype_size(sw_dtype d)
{
    return d == SW_F32 ? 4 : 2;
}

sw_status sw_cuda_convert(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a);
    if (!is_float_dtype(a->dtype) || !is_float_dtype(out->dtype))
        return sw_fail(err, SW_ERR_ARG, "cuda convert: only f32, f16 and bf16");
    if (sw_cuda_numel(out) != n)
        return sw_fail(err, SW_ERR_ARG, "cuda convert: out must have a's size");
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    if (a->dtype == out->dtype) {
        cudaError_t e = cudaMemcpyAsync(out->data, a->data, (size_t)n * float_dtype_size(a->dtype),
                                        cudaMemcpyDeviceToDevice, c->stream);
        sw_cuda_count_launch(c);
        return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "copying on the GPU");
    }
    SW_LAUNCH(convert_kernel, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    (a->data, (int)a->dtype, out->data, (int)out->dtype, n);
    return sw_cuda_check_launch(c, err, "convert");
}

/* ---- ABI 2: transpose and row gather/scatter ---- */

/* out[m, c, r] = a[m, r, c]; one thread per output element. */
__global__ void transpose_f32(const float *a, float *out, int64_t rows, int64_t cols, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        int64_t r = o % rows, c = (o / rows) % cols, m = o / (rows * cols);
        out[o] = a[(m * rows + r) * cols + c];
    }
}

/* out[i, :] = table[ids[i], :], zeros for an id out of range; a half table
 * (compute float16/bfloat16's token embedding) is widened on the way. */
template <typename T>
static __device__ __forceinline__ void gather_rows(const T *table, int64_t table_rows,
                                                   const int32_t *ids, float *out, int64_t len,
                                                   int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        int32_t id = ids[o / len];
        out[o] = id >= 0 && id < table_rows ? sw_load(table + (int64_t)id * len + o % len) : 0.0f;
    }
}

__global__ void gather_rows_f32(const float *table, int64_t table_rows, const int32_t *ids,
                                float *out, int64_t len, int64_t n)
{
    gather_rows(table, table_rows, ids, out, len, n);
}

__global__ void gather_rows_f16(const __half *table, int64_t table_rows, const int32_t *ids,
                                float *out, int64_t len, int64_t n)
{
    gather_rows(table, table_rows, ids, out, len, n);
}

__global__ void gather_rows_bf16(const __nv_bfloat16 *table, int64_t table_rows, const int32_t *ids,
                                 float *out, int64_t len, int64_t n)
{
    gather_rows(table, table_rows, ids, out, len, n);
}

__global__ void scatter_rows_f32(const float *src, const int32_t *ids, float *dst, int64_t dst_rows,
                                 int64_t len, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < n; o += stride) {
        int32_t id = ids[o / len];
        if (id >= 0 && id < dst_rows)
            dst[(int64_t)id * len + o % len] = src[o];
    }
}

sw_status sw_cuda_transpose(sw_backend *be, const sw_tensor *a, sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    int64_t n = sw_cuda_numel(a);
    if (need_f32(a, "transpose", "a", err) || need_f32(out, "transpose", "out", err))
        return SW_ERR_ARG;
    if (a->ndim < 2 || sw_cuda_numel(out) != n)
        return sw_fail(err, SW_ERR_ARG, "cuda transpose: out must have a's size");
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(transpose_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)a->data, (float *)out->data, a->shape[a->ndim - 2], a->shape[a->ndim - 1], n);
    return sw_cuda_check_launch(c, err, "transpose");
}

static sw_status rows_check(const sw_tensor *rows, const sw_tensor *ids, const sw_tensor *other,
                            int half_rows, const char *name, sw_error *err)
{
    int64_t len = sw_cuda_last_dim(rows);
    int rows_ok = rows->dtype == SW_F32 || (half_rows && sw_cuda_is_half(rows->dtype));
    if (!rows_ok || other->dtype != SW_F32 || ids->dtype != SW_I32)
        return sw_fail(err, SW_ERR_ARG, "cuda %s: f32 rows (gather: or f16/bf16) and int32 ids",
                       name);
    if (len <= 0 || sw_cuda_last_dim(other) != len ||
        sw_cuda_numel(other) != sw_cuda_numel(ids) * len)
        return sw_fail(err, SW_ERR_ARG, "cuda %s: one row per id", name);
    return SW_OK;
}

sw_status sw_cuda_gather_rows(sw_backend *be, const sw_tensor *table, const sw_tensor *ids,
                              sw_tensor *out, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (rows_check(table, ids, out, 1, "gather_rows", err) != SW_OK)
        return err->code;
    int64_t len = sw_cuda_last_dim(table), n = sw_cuda_numel(out);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    unsigned grid = sw_cuda_grid(c, n, SW_CUDA_THREADS);
    int64_t rows = sw_cuda_numel(table) / len;
    const int32_t *id = (const int32_t *)ids->data;
    if (table->dtype == SW_F16)
        SW_LAUNCH(gather_rows_f16, grid, SW_CUDA_THREADS, 0, c->stream)
    ((const __half *)table->data, rows, id, (float *)out->data, len, n);
    else if (table->dtype == SW_BF16) SW_LAUNCH(gather_rows_bf16, grid, SW_CUDA_THREADS, 0,
                                                c->stream)((const __nv_bfloat16 *)table->data, rows,
                                                           id, (float *)out->data, len, n);
    else SW_LAUNCH(gather_rows_f32, grid, SW_CUDA_THREADS, 0,
                   c->stream)((const float *)table->data, rows, id, (float *)out->data, len, n);
    return sw_cuda_check_launch(c, err, "gather_rows");
}

sw_status sw_cuda_scatter_rows(sw_backend *be, const sw_tensor *src, const sw_tensor *ids,
                               sw_tensor *dst, sw_error *err)
{
    sw_cuda *c = sw_cuda_of(be);
    if (rows_check(dst, ids, src, 0, "scatter_rows", err) != SW_OK)
        return err->code;
    int64_t len = sw_cuda_last_dim(dst), n = sw_cuda_numel(src);
    sw_status st;
    if (!sw_cuda_enter_work(c, n, &st, err))
        return st;
    SW_LAUNCH(scatter_rows_f32, sw_cuda_grid(c, n, SW_CUDA_THREADS), SW_CUDA_THREADS, 0, c->stream)
    ((const float *)src->data, (const int32_t *)ids->data, (float *)dst->data,
     sw_cuda_numel(dst) / len, len, n);
    return sw_cuda_check_launch(c, err, "scatter_rows");
}
