/* cuBLAS for the emulated backend: the table sw_cublas_load() returns in the
 * real build, served by OpenBLAS. Each call first applies cuBLAS's own
 * argument checks (the ones its documentation lists for CUBLAS_STATUS_
 * INVALID_VALUE), so a call the real library would refuse is refused here. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_loader.h"
#include "emu_errors.h"
#include "emu_internal.h"
#include "elementwise_math.h"

/* what a cublasHandle_t points to here */
struct sw_cublas_ctx {
    int magic;
    sw_cublas_stream stream;
};

namespace
{

enum { NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };
enum {
    R_32F = 0,
    R_16F = 2,
    R_16BF = 14,
    COMPUTE_32F = 68,
    COMPUTE_32F_FAST_16F = 74,
    COMPUTE_32F_FAST_16BF = 75,
    COMPUTE_32F_FAST_TF32 = 77
};

const int kMagic = 0xb1a5;

int valid(sw_cublas_handle h)
{
    return h && h->magic == kMagic;
}

int create(sw_cublas_handle *h)
{
    if (!h)
        return INVALID_VALUE;
    *h = (sw_cublas_handle)calloc(1, sizeof(sw_cublas_ctx));
    if (!*h)
        return ALLOC_FAILED;
    (*h)->magic = kMagic;
    return 0;
}

int destroy(sw_cublas_handle h)
{
    if (!valid(h))
        return NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return 0;
}

int set_stream(sw_cublas_handle h, sw_cublas_stream s)
{
    if (!valid(h))
        return NOT_INITIALIZED;
    h->stream = s;
    return 0;
}

int imax1(int v)
{
    return v > 1 ? v : 1;
}

/* cublas<t>gemm's checks, in its terms (column-major op(A) m x k, op(B) k x n). */
int check_gemm(sw_cublas_handle h, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc)
{
    if (!valid(h))
        return NOT_INITIALIZED;
    if (ta < 0 || ta > 2 || tb < 0 || tb > 2 || m < 0 || n < 0 || k < 0)
        return INVALID_VALUE;
    if (lda < imax1(ta == SW_CUBLAS_OP_N ? m : k) || ldb < imax1(tb == SW_CUBLAS_OP_N ? k : n) ||
        ldc < imax1(m))
        return INVALID_VALUE;
    return 0;
}

CBLAS_TRANSPOSE op(int t)
{
    return t == SW_CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
}

/* The product itself, once the checks passed (now, or at a graph's replay). */
void sgemm_now(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
               const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m == 0 || n == 0 || sw_emu_broken("sgemm"))
        return;
    if (beta == 0.0f) /* cuBLAS does not read C then: NaN in it must not matter */
        for (int j = 0; j < n; j++)
            memset(c + (size_t)j * ldc, 0, sizeof(float) * (size_t)m);
    cblas_sgemm(CblasColMajor, op(ta), op(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* On a capturing stream the call is checked now and recorded: alpha and beta
 * are host pointers (CUBLAS_POINTER_MODE_HOST), read at capture as cuBLAS
 * reads them, and the device buffers are read at each replay. */
int sgemm(sw_cublas_handle h, int ta, int tb, int m, int n, int k, const float *alpha,
          const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc)
{
    int st = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc);
    if (st)
        return st;
    if (!alpha || !beta)
        return INVALID_VALUE;
    float al = *alpha, be = *beta;
    if (sw_emu_capturing(h->stream))
        sw_emu_record(h->stream,
                      [=]() { sgemm_now(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc); });
    else
        sgemm_now(ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
    return 0;
}

/* A column-major rows x cols block of type `type` as float. */
float *widen(const void *p, int type, int rows, int cols, int ld)
{
    float *out = (float *)malloc(sizeof(float) * (size_t)imax1(rows) * (size_t)imax1(cols));
    if (!out)
        return NULL;
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            size_t at = (size_t)j * ld + i;
            float v = type == R_32F   ? ((const float *)p)[at]
                      : type == R_16F ? sw_f16_to_f32(((const uint16_t *)p)[at])
                                      : sw_bf16_to_f32(((const uint16_t *)p)[at]);
            out[(size_t)j * rows + i] = v;
        }
    return out;
}

/* cublasGemmEx's product once its checks passed: the 16-bit operands
 * widened exactly, summed in float32. */
int gemm_ex_now(int ta, int tb, int m, int n, int k, float alpha, const void *a, int atype, int lda,
                const void *b, int btype, int ldb, float beta, void *c, int ctype, int ldc)
{
    if (m == 0 || n == 0 || sw_emu_broken("gemm_ex"))
        return 0;
    int ar = ta == SW_CUBLAS_OP_N ? m : k, ac = ta == SW_CUBLAS_OP_N ? k : m;
    int br = tb == SW_CUBLAS_OP_N ? k : n, bc = tb == SW_CUBLAS_OP_N ? n : k;
    float *fa = widen(a, atype, ar, ac, lda), *fb = widen(b, btype, br, bc, ldb);
    float *fc = ctype == R_32F ? (float *)c : widen(c, ctype, m, n, ldc);
    int fldc = ctype == R_32F ? ldc : m;
    if (fa && fb && fc) {
        sgemm_now(ta, tb, m, n, k, alpha, fa, imax1(ar), fb, imax1(br), beta, fc, fldc);
        if (ctype != R_32F)
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    float v = fc[(size_t)j * m + i];
                    ((uint16_t *)c)[(size_t)j * ldc + i] =
                        ctype == R_16F ? sw_f32_to_f16(v) : sw_f32_to_bf16(v);
                }
    }
    free(fa);
    free(fb);
    if (ctype != R_32F)
        free(fc);
    return fa && fb && fc ? 0 : ALLOC_FAILED;
}

int gemm_ex(sw_cublas_handle h, int ta, int tb, int m, int n, int k, const void *alpha,
            const void *a, int atype, int lda, const void *b, int btype, int ldb, const void *beta,
            void *c, int ctype, int ldc, int compute, int algo)
{
    int st = check_gemm(h, ta, tb, m, n, k, lda, ldb, ldc);
    if (st)
        return st;
    /* cublasGemmEx's table for the float computes: COMPUTE_32F takes A = B of
     * 32F (C 32F), 16F or 16BF (C that type or 32F); the FAST_* computes take
     * 32F only (they narrow inside). The int8 rows are not served here (the
     * backend's int8 products are its own kernel). */
    int types_ok = (atype == R_32F || atype == R_16F || atype == R_16BF) && btype == atype &&
                   (ctype == R_32F || ctype == atype);
    int fast = compute == COMPUTE_32F_FAST_16F || compute == COMPUTE_32F_FAST_16BF ||
               compute == COMPUTE_32F_FAST_TF32;
    if (!types_ok || !(compute == COMPUTE_32F || (fast && atype == R_32F && ctype == R_32F)))
        return NOT_SUPPORTED;
    /* algo: CUBLAS_GEMM_DEFAULT (-1) .. ALGO23 (23), or the tensor-op ones
     * (99 .. 115), deprecated but accepted */
    if (algo < -1 || (algo > 23 && algo < 99) || algo > 115)
        return INVALID_VALUE;
    if (!alpha || !beta)
        return INVALID_VALUE;
    float al = *(const float *)alpha, be = *(const float *)beta; /* read now, as sgemm */
    if (!sw_emu_capturing(h->stream))
        return gemm_ex_now(ta, tb, m, n, k, al, a, atype, lda, b, btype, ldb, be, c, ctype, ldc);
    sw_emu_record(h->stream, [=]() {
        if (gemm_ex_now(ta, tb, m, n, k, al, a, atype, lda, b, btype, ldb, be, c, ctype, ldc))
            sw_emu_set_error(cudaErrorMemoryAllocation, "cublasGemmEx: no host memory to widen");
    });
    return 0;
}

int get_version(sw_cublas_handle h, int *version)
{
    if (!valid(h))
        return NOT_INITIALIZED;
    *version = 130000;
    return 0;
}

const sw_cublas_api emulated = {
    create,
    destroy,
    set_stream,
    sgemm,
    gemm_ex,
    get_version,
    "OpenBLAS (saywho's cuBLAS emulation)",
};

} // namespace

const sw_cublas_api *sw_cublas_load(const char *search_path, sw_error *err)
{
    (void)search_path;
    (void)err;
    return &emulated;
}
