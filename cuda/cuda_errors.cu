#include <stdio.h>

#include "cuda_internal.h"

/* The driver a build needs follows the CUDA that built it: the portable
 * wheel's CUDA 12.4 runs on any CUDA 12 driver, a CUDA 13 build needs 580. */
#if CUDART_VERSION >= 13000
#define DRIVER_HINT                                                                                \
    "The NVIDIA driver is missing or older than CUDA 13.0, which this saywho build needs: "        \
    "install driver 580 or newer, or use device=\"cpu\""
#else
#define DRIVER_HINT                                                                                \
    "The NVIDIA driver is missing or older than CUDA 12, which this saywho build needs: "          \
    "install driver 525 or newer, or use device=\"cpu\""
#endif

/* cudaGetErrorString says what CUDA saw; the user also needs to hear what to
 * do about it, in the words of someone running a notebook. */
static const char *hint(cudaError_t e)
{
    switch (e) {
    case cudaErrorInsufficientDriver: return DRIVER_HINT;
    case cudaErrorNoDevice:
        return "No NVIDIA GPU is visible: check nvidia-smi, CUDA_VISIBLE_DEVICES, or in "
               "Colab choose a GPU runtime; device=\"cpu\" works without one";
    case cudaErrorStubLibrary:
        return "The libcuda.so found is the toolkit's link stub, not a driver: install "
               "the NVIDIA driver or take the stubs folder out of LD_LIBRARY_PATH";
    case cudaErrorNoKernelImageForDevice:
        return "This GPU's architecture has no code in libsaywho_cuda.so (built for "
               "sm_75 and newer): it is too old, or saywho needs a rebuild for it";
    case cudaErrorUnsupportedPtxVersion:
        return "The driver is older than the CUDA used to build saywho and cannot "
               "compile its PTX for this GPU: update the NVIDIA driver";
    case cudaErrorInvalidDevice:
        return "No GPU has that index: see nvidia-smi and CUDA_VISIBLE_DEVICES";
    case cudaErrorDevicesUnavailable:
        return "The GPU is busy or in exclusive-process mode with another process "
               "holding it";
    case cudaErrorSystemDriverMismatch:
        return "The kernel driver and the user-space libcuda.so are different versions: "
               "reboot or reinstall the driver";
    case cudaErrorCompatNotSupportedOnDevice:
        return "The CUDA forward-compatibility package does not support this GPU";
    case cudaErrorMemoryAllocation:
        return "The GPU is out of memory: free other models (torch.cuda.empty_cache()) "
               "or use a smaller model";
    case cudaErrorInitializationError:
        return "The CUDA driver failed to initialise: check nvidia-smi";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
        return "A GPU kernel crashed; this is a bug in saywho, please report it. The "
               "CUDA context is now unusable: restart the Python process";
    default: return "";
    }
}

sw_status sw_cuda_fail(sw_error *err, cudaError_t e, const char *what)
{
    const char *h = hint(e);
    return sw_fail(err, SW_ERR_DEVICE, "%s: %s (%s)%s%s", what, cudaGetErrorString(e),
                   cudaGetErrorName(e), *h ? ". " : "", h);
}

sw_status sw_cuda_enter(sw_cuda *c, sw_error *err)
{
    cudaError_t e = cudaSetDevice(c->device);
    return e == cudaSuccess ? SW_OK : sw_cuda_fail(err, e, "cannot select the GPU");
}

sw_status sw_cuda_check_launch(sw_cuda *c, sw_error *err, const char *kernel)
{
    cudaError_t e = cudaGetLastError();
    const char *doing = c->capturing ? "capturing" : "launching";
    if (!c->capturing)
        c->counted.launches++;
    if (e == cudaSuccess && c->sync_launches && !c->capturing) {
        e = cudaStreamSynchronize(c->stream);
        doing = "running";
    }
    if (e == cudaSuccess)
        return SW_OK;
    char what[96];
    snprintf(what, sizeof what, "%s the %s kernel", doing, kernel);
    return sw_cuda_fail(err, e, what);
}
