/* Half-precision products (compute_type "float16", "bfloat16"): the weight
 * is float16 or bfloat16 on the device, converted once when it was uploaded;
 * the float32 activation is rounded to the weight's type here, and cuBLAS's
 * GemmEx multiplies the two on tensor cores, accumulating and writing
 * float32 (CUBLAS_COMPUTE_32F). So only the products' inputs are narrow:
 * sums, softmax, norms and the residual stream stay float32. */
#include "cuda_internal.h"
#include "half_convert.h"

template <typename T>
static __device__ __forceinline__ void narrow_rows(const float *a, T *out, int64_t n)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        sw_store(a[i], out + i);
}

__global__ void f32_to_f16(const float *a, __half *out, int64_t n)
{
    narrow_rows(a, out, n);
}

__global__ void f32_to_bf16(const float *a, __nv_bfloat16 *out, int64_t n)
{
    narrow_rows(a, out, n);
}

int sw_cuda_is_half(sw_dtype d)
{
    return d == SW_F16 || d == SW_BF16;
}

sw_status sw_cuda_narrow(sw_backend *be, const float *a, sw_dtype to, void *out, int64_t n,
                         sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    unsigned grid = sw_cuda_grid(cu, n, SW_CUDA_THREADS);
    if (to == SW_F16) {
        SW_LAUNCH(f32_to_f16, grid, SW_CUDA_THREADS, 0, cu->stream)(a, (__half *)out, n);
        return sw_cuda_check_launch(cu, err, "f32_to_f16");
    }
    SW_LAUNCH(f32_to_bf16, grid, SW_CUDA_THREADS, 0, cu->stream)(a, (__nv_bfloat16 *)out, n);
    return sw_cuda_check_launch(cu, err, "f32_to_bf16");
}

/* c [m, n] (f32) = alpha * a [m, k] . op(b) + beta * c, b half; a f32 (rounded
 * to b's type in a scratch block first: workspace.cu) or already b's type. The caller
 * (sw_cuda_matmul) has checked the shapes and the int range; m, n, k > 0. */
sw_status sw_cuda_matmul_half(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                              int trans_b, float alpha, float beta, int64_t m, int64_t n, int64_t k,
                              sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    if (a->dtype != SW_F32 && a->dtype != b->dtype)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: a must be f32 or b's type");
    const void *a_half = a->data;
    void *scratch = NULL;
    if (a->dtype == SW_F32) {
        scratch = sw_cuda_scratch(be, (size_t)(m * k) * 2, err);
        if (!scratch)
            return err->code;
        if (sw_cuda_narrow(be, (const float *)a->data, b->dtype, scratch, m * k, err) != SW_OK) {
            sw_cuda_scratch_done(be, scratch);
            return err->code;
        }
        a_half = scratch;
    }
    /* the same column-major view as sw_cuda_matmul's sgemm */
    int type = b->dtype == SW_F16 ? SW_CUDA_R_16F : SW_CUDA_R_16BF;
    int opb = trans_b ? SW_CUBLAS_OP_T : SW_CUBLAS_OP_N;
    int ldb = trans_b ? (int)k : (int)n;
    int s = cu->blas->gemm_ex(cu->blas_handle, opb, SW_CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha,
                              b->data, type, ldb, a_half, type, (int)k, &beta, c->data,
                              SW_CUDA_R_32F, (int)n, SW_CUBLAS_COMPUTE_32F, SW_CUBLAS_GEMM_DEFAULT);
    sw_cuda_count_launch(cu);
    sw_cuda_scratch_done(be, scratch);
    if (s != SW_CUBLAS_STATUS_SUCCESS)
        return sw_fail(err, SW_ERR_DEVICE, "cuBLAS GemmEx %s (m=%lld n=%lld k=%lld) failed: %s",
                       b->dtype == SW_F16 ? "f16" : "bf16", (long long)m, (long long)n,
                       (long long)k, sw_cublas_status_name(s));
    return SW_OK;
}
