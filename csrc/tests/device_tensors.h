/* Tensors to and from a backend for the C tests that compare a device's
 * entries with the CPU's: a failed copy is a CHECK failure, not an abort,
 * so a run still reports every case. */
#ifndef SW_TEST_DEVICE_TENSORS_H
#define SW_TEST_DEVICE_TENSORS_H

#include <stdlib.h>

#include "check.h"

/* A tensor of dtype on b holding host's bytes. */
static inline sw_tensor upload(sw_backend *b, sw_dtype dtype, int ndim, const int64_t *shape,
                               const void *host)
{
    sw_error err = {SW_OK, ""};
    sw_tensor t = {0};
    CHECK(sw_tensor_new(b, dtype, ndim, shape, &t, &err) == SW_OK);
    CHECK(b->upload(b, t.data, host, sw_tensor_nbytes(&t), &err) == SW_OK);
    return t;
}

/* t's float32 values in a malloc'd copy the caller frees (an empty tensor
 * gives a block of one byte, so the result is never NULL on success). */
static inline float *download(sw_backend *b, const sw_tensor *t)
{
    sw_error err = {SW_OK, ""};
    size_t bytes = sw_tensor_nbytes(t);
    float *h = malloc(bytes ? bytes : 1);
    CHECK(h && b->download(b, h, t->data, bytes, &err) == SW_OK);
    return h;
}

#endif
