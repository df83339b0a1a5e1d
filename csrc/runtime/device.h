/* Choosing a device: "cpu", "cuda", "cuda:N" or "auto". The CUDA backend is a
 * separate shared library, dlopen'ed only here and only when asked for, so the
 * core runs on machines with no GPU, no driver and no CUDA libraries. */
#ifndef SW_DEVICE_H
#define SW_DEVICE_H

#include "backend.h"

/* The one place a device string is read (Python asks it too, through
 * _core.parse_device): "auto", "cpu", "cuda", "cuda:N" with N in
 * [0, SW_DEVICE_MAX_INDEX], or "cuda-emulated" (the CUDA backend's kernels
 * built for the CPU, docs/cuda_emulator.md). Anything else is SW_ERR_ARG. */
typedef enum sw_device_request {
    SW_REQUEST_AUTO,
    SW_REQUEST_CPU,
    SW_REQUEST_CUDA,
    SW_REQUEST_CUDA_EMULATED,
} sw_device_request;

#define SW_DEVICE_MAX_INDEX 1023

sw_status sw_device_parse(const char *spec, sw_device_request *kind, int *index, sw_error *err);

typedef struct sw_device_options {
    const char *device;       /* as sw_device_parse reads it (NULL = "auto") */
    const char *cuda_library; /* path of libsaywho_cuda.so; NULL = the loader's search */
    const char *cublas_path;  /* folders to find cuBLAS in (":"-separated); NULL = none */
    int cpu_threads;          /* <= 0: one per available CPU */
} sw_device_options;

sw_device_options sw_device_default_options(void);

/* Opens the backend the options ask for. A CUDA backend first passes the
 * self-check (selfcheck.h), once per process and GPU, unless the environment
 * says SAYWHO_GPU_SELF_CHECK=0; failing it is failing to open. With "auto", a CUDA failure is not
 * an error: the CPU backend is returned and `fallback_reason` (at least 256 bytes, may be NULL)
 * says why. With "cuda", the failure is SW_ERR_DEVICE. */
sw_status sw_device_open(const sw_device_options *opt, sw_backend **out, char *fallback_reason,
                         size_t reason_len, sw_error *err);

/* Whether the CUDA backend could be used, without keeping it open. */
sw_status sw_cuda_probe(const char *cuda_library, const char *cublas_path, sw_error *err);

#endif
