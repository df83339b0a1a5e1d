/* int8 products on the GPU: the same quantization as the CPU (runtime/
 * q8_gemm.h), then dp4a dot products of int8 rows, summed exactly in int32.
 * A block per (activation row, 128 weight rows) keeps the row in shared
 * memory; each warp walks weight rows, each lane four bytes at a time. */
#include <limits.h>

#include "cuda_internal.h"

#define Q8_THREADS 128

__global__ void quantize_rows_q8(const float *a, int k, int8_t *q, float *scale)
{
    SW_SHARED(float, part, Q8_THREADS);
    const float *row = a + (size_t)blockIdx.x * k;
    float amax = 0.0f;
    for (int i = threadIdx.x; i < k; i += blockDim.x)
        amax = fmaxf(amax, fabsf(row[i]));
    part[threadIdx.x] = amax;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + w]);
        __syncthreads();
    }
    float s = part[0] > 0.0f ? 127.0f / part[0] : 1.0f;
    for (int i = threadIdx.x; i < k; i += blockDim.x) {
        float v = fminf(fmaxf(nearbyintf(row[i] * s), -127.0f), 127.0f);
        q[(size_t)blockIdx.x * k + i] = (int8_t)v;
    }
    if (threadIdx.x == 0)
        scale[blockIdx.x] = s;
}

/* grid.y is at most 65535, and the int8 encoder has batch x 1500 rows: blocks
 * step through the rows, so any number of them works. */
#define Q8_MAX_GRID_Y 65535

__global__ void gemm_q8(int m, int n, int k, const int8_t *qa, const float *sa, const int8_t *w,
                        const float *w_scale, float beta, float *c)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    const int8_t *w_row = w + (size_t)j * k;
    for (int r = blockIdx.y; r < m; r += gridDim.y) {
        const int8_t *a_row = qa + (size_t)r * k;
        int acc = 0, i = 0;
        /* rows are int8 arrays of any alignment: pack four bytes by hand */
        for (; i + 4 <= k; i += 4) {
            int av = (a_row[i] & 0xff) | (a_row[i + 1] & 0xff) << 8 | (a_row[i + 2] & 0xff) << 16 |
                     (a_row[i + 3] & 0xff) << 24;
            int wv = (w_row[i] & 0xff) | (w_row[i + 1] & 0xff) << 8 | (w_row[i + 2] & 0xff) << 16 |
                     (w_row[i + 3] & 0xff) << 24;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 610
            /* Pascal's P100 (sm_60) has no dp4a: the same exact int32 sum */
            for (int b = 0; b < 32; b += 8)
                acc += (int)(int8_t)(av >> b) * (int)(int8_t)(wv >> b);
#else
            acc = __dp4a(av, wv, acc);
#endif
        }
        for (; i < k; i++)
            acc += (int)a_row[i] * (int)w_row[i];
        float v = (float)acc / (sa[r] * w_scale[j]);
        float *out = c + (size_t)r * n + j;
        /* rounded product, then rounded sum, as on the CPU (q8_gemm.c): nvcc
         * would otherwise fuse the two into one FMA and differ in the last bit */
        *out = beta == 0.0f ? v : __fadd_rn(v, __fmul_rn(beta, *out));
    }
}

sw_status sw_cuda_matmul_q8(sw_backend *be, const sw_tensor *a, const sw_tensor *w,
                            const sw_tensor *w_scale, const sw_tensor *w_sum, sw_tensor *c,
                            float beta, sw_error *err)
{
    (void)w_sum; /* dp4a multiplies signed bytes: no unsigned shift to undo */
    sw_cuda *cu = sw_cuda_of(be);
    int64_t m = a->shape[0], k = a->shape[1], n = w->shape[0];
    if (m == 0 || n == 0)
        return SW_OK;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul_q8: a dimension exceeds the int range");
    if (w->dtype != SW_I8) /* the packed layout is the CPU's (q8_packed.h) */
        return sw_fail(
            err, SW_ERR_ARG,
            "cuda matmul_q8: the weight must be row-major int8, not the CPU's packed layout");
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;
    size_t q_bytes = ((size_t)(m * k) + 255) & ~(size_t)255;
    /* the quantized rows and their scales: workspace.cu's scratch, so that a
     * graph can replay the product */
    char *scratch = (char *)sw_cuda_scratch(be, q_bytes + (size_t)m * sizeof(float), err);
    if (!scratch)
        return err->code;
    int8_t *qa = (int8_t *)scratch;
    float *sa = (float *)(scratch + q_bytes);
    SW_LAUNCH(quantize_rows_q8, (unsigned)m, Q8_THREADS, 0, cu->stream)
    ((const float *)a->data, (int)k, qa, sa);
    st = sw_cuda_check_launch(cu, err, "quantize_rows_q8");
    if (st == SW_OK) {
        dim3 grid((unsigned)((n + Q8_THREADS - 1) / Q8_THREADS),
                  (unsigned)(m < Q8_MAX_GRID_Y ? m : Q8_MAX_GRID_Y));
        SW_LAUNCH(gemm_q8, grid, Q8_THREADS, 0, cu->stream)
        ((int)m, (int)n, (int)k, qa, sa, (const int8_t *)w->data, (const float *)w_scale->data,
         beta, (float *)c->data);
        st = sw_cuda_check_launch(cu, err, "gemm_q8");
    }
    sw_cuda_scratch_done(be, scratch);
    return st;
}
