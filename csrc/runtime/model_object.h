/* The life cycle every C model object shares (docs/model_objects.md): GE2E,
 * ResNet34, CAM++, segmentation, Silero and Whisper each begin their struct
 * with an sw_model_object and get create's checks and allocation, destroy,
 * backend-lost and backend from here instead of writing them again.
 *
 * A model is made on one backend and keeps its weights in that backend's
 * pool. The caller may close the backend first (the Python Runtime does when
 * it is closed while a model still lives): it then calls backend_lost, after
 * which the model refuses to run and its destroy only forgets its weights,
 * whose bytes the pool has taken back already. */
#ifndef SW_MODEL_OBJECT_H
#define SW_MODEL_OBJECT_H

#include <stddef.h>

#include "backend.h"
#include "named_tensors.h"

typedef struct sw_model_object sw_model_object;

/* What differs between models: names for messages, and how to free the
 * weights (each through sw_model_object_free_weight). */
typedef struct sw_model_kind {
    const char *name;   /* "CAM++": in messages */
    const char *create; /* "sw_campp_create": in argument errors */
    void (*free_weights)(sw_model_object *o);
} sw_model_kind;

/* The first member of every model's struct. */
struct sw_model_object {
    const sw_model_kind *kind;
    sw_backend *be;
    int backend_lost;
};

/* A zeroed model struct of `size` bytes on be, its object set up: NULL (err
 * set) when be is missing, tensors is NULL with n_tensors > 0, or there is
 * no host memory. */
void *sw_model_object_new(size_t size, const sw_model_kind *kind, sw_backend *be,
                          const sw_named_tensor *tensors, int n_tensors, sw_error *err);

/* Frees the weights (the kind's free_weights) and the struct; NULL is a no-op. */
void sw_model_object_destroy(sw_model_object *o);

/* The backend was closed under the model; NULL is a no-op. */
void sw_model_object_lost(sw_model_object *o);

sw_backend *sw_model_object_backend(const sw_model_object *o);

/* SW_ERR_DEVICE naming the model once its backend is lost, else SW_OK: the
 * first check of every forward. */
sw_status sw_model_object_usable(const sw_model_object *o, sw_error *err);

/* Frees one weight, or only forgets it once the backend is lost. */
void sw_model_object_free_weight(const sw_model_object *o, sw_tensor *t);

/* The three public functions of a model type `type` (a struct whose first
 * member is `sw_model_object obj`), named prefix_destroy, prefix_backend_lost
 * and prefix_backend. */
#define SW_MODEL_OBJECT_FUNCTIONS(type, prefix)                                                    \
    _Static_assert(offsetof(type, obj) == 0, #type ": the object must come first");                \
    void prefix##_destroy(type *m)                                                                 \
    {                                                                                              \
        sw_model_object_destroy(m ? &m->obj : NULL);                                               \
    }                                                                                              \
    void prefix##_backend_lost(type *m)                                                            \
    {                                                                                              \
        sw_model_object_lost(m ? &m->obj : NULL);                                                  \
    }                                                                                              \
    sw_backend *prefix##_backend(const type *m)                                                    \
    {                                                                                              \
        return sw_model_object_backend(&m->obj);                                                   \
    }

#endif
