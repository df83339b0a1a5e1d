/* Row-major matmul through cuBLAS, which is column-major. A row-major [r,c]
 * block read column-major is its transpose [c,r], so instead of transposing
 * anything we ask cuBLAS for c^T = op(b)^T a^T: the bytes of a row-major c are
 * the bytes of a column-major c^T. */
#include <limits.h>

#include "cuda_internal.h"

sw_status sw_cuda_matmul(sw_backend *be, const sw_tensor *a, const sw_tensor *b, sw_tensor *c,
                         int trans_b, float alpha, float beta, sw_error *err)
{
    sw_cuda *cu = sw_cuda_of(be);
    if (a->dtype != SW_F32 || b->dtype != SW_F32 || c->dtype != SW_F32)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: f32 operands only");
    /* Leading dimensions of a and c fold into m, so [batch, t, k] works too. */
    int64_t n = sw_cuda_last_dim(c);
    int64_t m = n > 0 ? sw_cuda_numel(c) / n : 0;
    int64_t k = sw_cuda_last_dim(a);
    int64_t b_last = trans_b ? k : n;
    if (sw_cuda_numel(a) != m * k || sw_cuda_numel(b) != k * n || sw_cuda_last_dim(b) != b_last)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: shapes of a, b and c do not agree");
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return sw_fail(err, SW_ERR_ARG, "cuda matmul: a dimension exceeds cuBLAS's int range");
    if (m == 0 || n == 0)
        return SW_OK;
    sw_status st = sw_cuda_enter(cu, err);
    if (st != SW_OK)
        return st;

    /* Column-major view: c^T is n x m (ld n), a^T is k x m (ld k). b [k,n]
     * reads as b^T, n x k (ld n), already what we need; b [n,k] reads as
     * k x n (ld k) and needs OP_T to become n x k. */
    int opb = trans_b ? SW_CUBLAS_OP_T : SW_CUBLAS_OP_N;
    int ldb = trans_b ? (int)k : (int)n;
    int s = cu->blas->sgemm(cu->blas_handle, opb, SW_CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha,
                            (const float *)b->data, ldb, (const float *)a->data, (int)k, &beta,
                            (float *)c->data, (int)n);
    if (s != SW_CUBLAS_STATUS_SUCCESS)
        return sw_fail(err, SW_ERR_DEVICE, "cuBLAS sgemm (m=%lld n=%lld k=%lld) failed: %s",
                       (long long)m, (long long)n, (long long)k, sw_cublas_status_name(s));
    return SW_OK;
}
