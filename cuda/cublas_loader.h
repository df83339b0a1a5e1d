/* cuBLAS is found at run time, not linked: the wheel must import on machines
 * without it, and on Colab it must use the copy torch already installed
 * (so.12 today, so.13 later) instead of shipping or pulling a second one.
 * So no cuBLAS header is included either; the few types and enum values
 * used are declared here, and they have been stable since cuBLAS 11. */
#ifndef SW_CUBLAS_LOADER_H
#define SW_CUBLAS_LOADER_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_cublas_ctx *sw_cublas_handle; /* cublasHandle_t */
typedef struct CUstream_st *sw_cublas_stream;   /* cudaStream_t */

enum {
    SW_CUBLAS_STATUS_SUCCESS = 0,
    SW_CUBLAS_OP_N = 0,
    SW_CUBLAS_OP_T = 1,
    SW_CUDA_R_32F = 0,
    SW_CUDA_R_16F = 2,
    SW_CUDA_R_16BF = 14,
    SW_CUBLAS_COMPUTE_32F = 68,
    SW_CUBLAS_GEMM_DEFAULT = -1
};

typedef struct sw_cublas_api {
    int (*create)(sw_cublas_handle *handle);
    int (*destroy)(sw_cublas_handle handle);
    int (*set_stream)(sw_cublas_handle handle, sw_cublas_stream stream);
    int (*sgemm)(sw_cublas_handle handle, int transa, int transb, int m, int n, int k,
                 const float *alpha, const float *a, int lda, const float *b, int ldb,
                 const float *beta, float *c, int ldc);
    /* compute_type float16 / bfloat16 (cuda/matmul_half.cu) */
    int (*gemm_ex)(sw_cublas_handle handle, int transa, int transb, int m, int n, int k,
                   const void *alpha, const void *a, int atype, int lda, const void *b, int btype,
                   int ldb, const void *beta, void *c, int ctype, int ldc, int compute_type,
                   int algo);
    int (*get_version)(sw_cublas_handle handle, int *version);
    char path[512]; /* where the library came from, for device_info and errors */
} sw_cublas_api;

/* Loads once per process and keeps the library loaded for good (cuBLAS does
 * not support being unloaded under a live CUDA context), so the search_path
 * of the first call that finds it wins. search_path: folders (":"-separated,
 * may be NULL) tried after a copy already in the process and before the
 * system loader's path. Thread-safe. Returns NULL and fills err with
 * SW_ERR_DEVICE naming every place searched. */
const sw_cublas_api *sw_cublas_load(const char *search_path, sw_error *err);

/* cuBLAS status code as text; cublasGetStatusString is not in every version. */
const char *sw_cublas_status_name(int status);

#ifdef __cplusplus
}
#endif
#endif
