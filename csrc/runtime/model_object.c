/* The model objects' shared life cycle (model_object.h). */
#include "model_object.h"

#include <stdlib.h>

void *sw_model_object_new(size_t size, const sw_model_kind *kind, sw_backend *be,
                          const sw_named_tensor *tensors, int n_tensors, sw_error *err)
{
    if (!be || (!tensors && n_tensors > 0) || n_tensors < 0) {
        sw_fail(err, SW_ERR_ARG, "%s: backend and tensors needed", kind->create);
        return NULL;
    }
    sw_model_object *o = calloc(1, size);
    if (!o) {
        sw_fail(err, SW_ERR_NOMEM, "%s: out of host memory", kind->name);
        return NULL;
    }
    o->kind = kind;
    o->be = be;
    return o;
}

void sw_model_object_destroy(sw_model_object *o)
{
    if (!o)
        return;
    o->kind->free_weights(o);
    free(o);
}

void sw_model_object_lost(sw_model_object *o)
{
    if (o)
        o->backend_lost = 1;
}

sw_backend *sw_model_object_backend(const sw_model_object *o)
{
    return o->be;
}

sw_status sw_model_object_usable(const sw_model_object *o, sw_error *err)
{
    if (o->backend_lost)
        return sw_fail(err, SW_ERR_DEVICE, "%s: the backend was closed", o->kind->name);
    return SW_OK;
}

void sw_model_object_free_weight(const sw_model_object *o, sw_tensor *t)
{
    sw_weight_free(t, o->backend_lost);
}
