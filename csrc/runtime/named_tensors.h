/* Named host arrays -> a model's tensors on a backend. Every model (Whisper,
 * segmentation, CAM++, ResNet34, GE2E, Silero VAD) is created from a list of
 * arrays named as in its checkpoint; this is the one place that finds a name,
 * checks its shape and dtype (the error names the tensor, the shape expected
 * and the shape found) and uploads it once, as float32. */
#ifndef SW_NAMED_TENSORS_H
#define SW_NAMED_TENSORS_H

#include <stdint.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A host array that someone else owns, with its state-dict name. */
typedef struct sw_named_tensor {
    const char *name;
    sw_dtype dtype; /* SW_F32, SW_F16 or SW_BF16 */
    int ndim;
    int64_t shape[SW_MAX_DIMS];
    const void *data; /* C-contiguous */
} sw_named_tensor;

typedef struct sw_shape {
    int ndim;
    int64_t d[SW_MAX_DIMS];
} sw_shape;

static inline sw_shape sw_shape1(int64_t a)
{
    sw_shape s = {1, {a, 0, 0, 0}};
    return s;
}
static inline sw_shape sw_shape2(int64_t a, int64_t b)
{
    sw_shape s = {2, {a, b, 0, 0}};
    return s;
}
static inline sw_shape sw_shape3(int64_t a, int64_t b, int64_t c)
{
    sw_shape s = {3, {a, b, c, 0}};
    return s;
}
static inline sw_shape sw_shape4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    sw_shape s = {4, {a, b, c, d}};
    return s;
}

/* Where a model's weights come from while it is created. The first failure
 * sticks in *err and every later call returns at once, so a model's loader is
 * a flat list of calls with one check at the end. */
typedef struct sw_weight_source {
    sw_backend *be;
    const sw_named_tensor *tensors;
    int n;
    const char *what; /* "segmentation weights", in every message */
    sw_error *err;
} sw_weight_source;

sw_weight_source sw_weight_source_make(sw_backend *be, const sw_named_tensor *tensors, int n,
                                       const char *what, sw_error *err);

/* The tensor `name` of shape `want` (float32, float16 or bfloat16 with data),
 * or NULL with the error set. */
const sw_named_tensor *sw_weights_find(sw_weight_source *src, const char *name, sw_shape want);

/* The same, float32 only: for weights the loader rearranges on the host. */
const float *sw_weights_host_f32(sw_weight_source *src, const char *name, sw_shape want);

/* Finds `name` and uploads it to *dst as float32 (converted on the backend
 * when it is half precision). */
sw_status sw_weights_load(sw_weight_source *src, sw_tensor *dst, const char *name, sw_shape want);

/* Uploads a tensor found by sw_weights_find as `dtype` (f32, f16 or bf16),
 * converting on the backend when the host array has another type. */
sw_status sw_weights_upload_named(sw_weight_source *src, const sw_named_tensor *t, sw_tensor *dst,
                                  sw_dtype dtype);

/* Uploads float32 host data (a rearranged weight) as a new tensor. */
sw_status sw_weights_upload(sw_weight_source *src, const float *host, sw_shape shape,
                            sw_tensor *dst);

/* Frees a weight; when the backend was destroyed under the model its pool has
 * taken the bytes back already and the tensor is only forgotten. */
void sw_weight_free(sw_tensor *t, int backend_lost);

#ifdef __cplusplus
}
#endif
#endif
