/* A tensor is a dense, row-major block of one dtype that lives on one backend.
 * It is a plain struct: model code reads its shape, the backend owns its bytes
 * (they come from the backend's pool and go back there in sw_tensor_free). */
#ifndef SW_TENSOR_H
#define SW_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SW_MAX_DIMS 4

/* SW_I8_PACKED: int8 weight rows in the CPU's packed layout (q8_packed.h),
 * on the CPU backend only; the bytes of SW_I8 in another order. */
typedef enum sw_dtype {
    SW_F32 = 0,
    SW_F16 = 1,
    SW_BF16 = 2,
    SW_I8 = 3,
    SW_I32 = 4,
    SW_I8_PACKED = 5
} sw_dtype;

struct sw_backend;

typedef struct sw_tensor {
    sw_dtype dtype;
    int ndim;
    int64_t shape[SW_MAX_DIMS];
    void *data;                 /* host or device pointer, per backend */
    struct sw_backend *backend; /* who owns data; NULL for a borrowed view */
} sw_tensor;

size_t sw_dtype_size(sw_dtype dtype);
const char *sw_dtype_name(sw_dtype dtype);

int64_t sw_tensor_numel(const sw_tensor *t);

/* The same memory seen from element `offset` (in t's dtype) with the shape
 * ndim, d0..d2: a view, never freed on its own (the models' forwards slice
 * their activations with it). */
sw_tensor sw_tensor_slice(const sw_tensor *t, int64_t offset, int ndim, int64_t d0, int64_t d1,
                          int64_t d2);
size_t sw_tensor_nbytes(const sw_tensor *t);

/* Allocates an uninitialised tensor on `backend`. */
sw_status sw_tensor_new(struct sw_backend *backend, sw_dtype dtype, int ndim, const int64_t *shape,
                        sw_tensor *out, sw_error *err);

/* Returns the bytes to the backend's pool; safe on a zeroed tensor. */
void sw_tensor_free(sw_tensor *t);

/* A tensor that points at memory someone else owns (e.g. a NumPy array). */
sw_tensor sw_tensor_view(sw_dtype dtype, int ndim, const int64_t *shape, void *data);

/* 1 when both have the same dtype and shape. */
int sw_tensor_same_shape(const sw_tensor *a, const sw_tensor *b);

/* Frames out of a time-major conv1d or max_pool1d window (0 when too short). */
int64_t sw_window_frames(int64_t t_in, int64_t kernel, int64_t stride);

/* Rows and row length when a tensor is seen as a matrix over its last dim. */
int64_t sw_rows(const sw_tensor *t);
int64_t sw_row_len(const sw_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
