/* A minimal harness for the C tests: CHECK records a failure and goes on, so
 * one run reports every broken case; main returns sw_check_summary(). */
#ifndef SW_CHECK_H
#define SW_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu_backend.h"
#include "device.h"

static int sw_checks_run;
static int sw_checks_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        sw_checks_run++;                                                                           \
        if (!(cond)) {                                                                             \
            sw_checks_failed++;                                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double sw_a_ = (double)(a), sw_b_ = (double)(b);                                           \
        sw_checks_run++;                                                                           \
        if (!(fabs(sw_a_ - sw_b_) <= (tol))) {                                                     \
            sw_checks_failed++;                                                                    \
            fprintf(stderr, "%s:%d: %s = %.9g, %s = %.9g, tolerance %g\n", __FILE__, __LINE__, #a, \
                    sw_a_, #b, sw_b_, (double)(tol));                                              \
        }                                                                                          \
    } while (0)

static inline int sw_check_summary(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, sw_checks_run, sw_checks_failed);
    return sw_checks_failed == 0 && sw_checks_run > 0 ? 0 : 1;
}

/* The backend the op tests run on: the CPU's, or with SAYWHO_TEST_CUDA_LIBRARY
 * the CUDA backend that library holds. Only the emulator's build
 * (libsaywho_cuda_emu.so) qualifies: the tests read and write tensors in place,
 * which its device memory, being host memory, allows. */
static inline sw_status sw_test_backend_open(int threads, sw_backend **out, sw_error *err)
{
    const char *lib = getenv("SAYWHO_TEST_CUDA_LIBRARY");
    if (!lib || !*lib)
        return sw_cpu_backend_open(threads, out, err);
    sw_device_options opt = {"cuda", lib, NULL, threads};
    sw_status st = sw_device_open(&opt, out, NULL, 0, err);
    if (st != SW_OK)
        fprintf(stderr, "cannot open %s: %s\n", lib, err->msg);
    return st;
}

#endif
