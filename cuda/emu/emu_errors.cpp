/* The emulator's last error (emu_errors.h): one record, set by whichever part
 * of the emulator failed and read by the runtime's error calls, as the CUDA
 * runtime keeps one for the process. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emu_errors.h"

namespace
{

pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
cudaError_t last_error = cudaSuccess;
char last_message[700];
char reported_message[700]; /* the account of the error cudaGetLastError last returned */
cudaError_t reported_error = cudaSuccess;

} // namespace

void sw_emu_set_error(cudaError_t e, const char *fmt, ...)
{
    pthread_mutex_lock(&error_lock);
    last_error = e;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&error_lock);
}

cudaError_t cudaPeekAtLastError(void)
{
    pthread_mutex_lock(&error_lock);
    cudaError_t e = last_error;
    pthread_mutex_unlock(&error_lock);
    return e;
}

cudaError_t cudaGetLastError(void)
{
    pthread_mutex_lock(&error_lock);
    cudaError_t e = last_error;
    if (e != cudaSuccess) {
        reported_error = e;
        memcpy(reported_message, last_message, sizeof reported_message);
    }
    last_error = cudaSuccess;
    pthread_mutex_unlock(&error_lock);
    return e;
}

const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorIllegalState: return "cudaErrorIllegalState";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    default: return "cudaError";
    }
}

const char *cudaGetErrorString(cudaError_t e)
{
    const char *msg = NULL;
    pthread_mutex_lock(&error_lock);
    if (e == reported_error && reported_message[0])
        msg = reported_message;
    pthread_mutex_unlock(&error_lock);
    if (msg)
        return msg;
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorStreamCaptureUnsupported:
        return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
        return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit:
        return "operation would make the legacy stream depend on a capturing blocking stream";
    default: return "emulated CUDA error";
    }
}
