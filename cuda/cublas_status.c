/* cuBLAS status codes as text, for both builds (the emulated one has no
 * loader); cublasGetStatusString is not in every version. */
#include "cublas_loader.h"

const char *sw_cublas_status_name(int status)
{
    switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED (is the driver working?)";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED (out of GPU memory)";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH (this cuBLAS does not support the GPU)";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "unknown cuBLAS status";
}
