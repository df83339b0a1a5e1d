/* The shared life cycle of the extension's network objects (py_model.h). */
#include "py_model.h"

static RuntimeObject *rt_of(ModelObject *m)
{
    return (RuntimeObject *)m->runtime;
}

int swpy_model_alive(ModelObject *m)
{
    if (m->model && rt_of(m)->backend != m->kind->backend(m->model)) {
        m->kind->backend_lost(m->model);
        return 0;
    }
    return m->model != NULL;
}

void swpy_runtime_lock(RuntimeObject *rt)
{
    if (!PyThread_acquire_lock(rt->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(rt->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
}

RuntimeObject *swpy_open_runtime(PyObject *runtime)
{
    PyObject *core = PyImport_ImportModule("saywho._core");
    PyObject *runtime_type = core ? PyObject_GetAttrString(core, "Runtime") : NULL;
    Py_XDECREF(core);
    if (!runtime_type)
        return NULL;
    int is_rt = PyObject_IsInstance(runtime, runtime_type);
    Py_DECREF(runtime_type);
    if (is_rt <= 0) {
        if (is_rt == 0)
            PyErr_SetString(PyExc_TypeError, "runtime must be a saywho._core.Runtime");
        return NULL;
    }
    RuntimeObject *rt = (RuntimeObject *)runtime;
    if (!rt->backend) {
        PyErr_SetString(SwDeviceError, "the Runtime is closed");
        return NULL;
    }
    return rt;
}

int swpy_model_bind(ModelObject *self, PyObject *runtime, const swpy_model_kind *kind,
                    swpy_create_fn create, void *ctx)
{
    if (self->runtime) {
        PyErr_Format(PyExc_RuntimeError, "%s is already initialised", kind->name);
        return -1;
    }
    RuntimeObject *rt = swpy_open_runtime(runtime);
    if (!rt)
        return -1;
    sw_error err = {SW_OK, ""};
    void *model = NULL;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(rt->lock, WAIT_LOCK);
    if (!rt->backend)
        sw_fail(&err, SW_ERR_DEVICE, "the Runtime was closed");
    else
        create(ctx, rt->backend, &model, &err);
    PyThread_release_lock(rt->lock);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    self->runtime = swpy_new_ref(runtime);
    self->model = model;
    self->kind = kind;
    return 0;
}

typedef struct tensors_call {
    const swpy_model_kind *kind;
    const swpy_tensors *held;
} tensors_call;

static void create_from_tensors(void *ctx, sw_backend *be, void **out, sw_error *err)
{
    const tensors_call *c = ctx;
    c->kind->create(be, c->held->t, (int)c->held->n, out, err);
}

int swpy_model_init(ModelObject *self, PyObject *args, PyObject *kwargs,
                    const swpy_model_kind *kind)
{
    static char *kwlist[] = {"runtime", "tensors", NULL};
    PyObject *runtime, *tensors;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO", kwlist, &runtime, &tensors))
        return -1;
    swpy_tensors h;
    if (swpy_tensors_hold(tensors, &h) != 0) {
        swpy_tensors_free(&h);
        return -1;
    }
    tensors_call c = {kind, &h};
    int rc = swpy_model_bind(self, runtime, kind, create_from_tensors, &c);
    swpy_tensors_free(&h);
    return rc;
}

/* Without the GIL, around a run: takes the Runtime's lock and returns the
 * model, or NULL with err set (the Runtime was closed); model_unlock always
 * follows. */
static void *model_lock(ModelObject *self, sw_error *err)
{
    PyThread_acquire_lock(rt_of(self)->lock, WAIT_LOCK);
    if (!swpy_model_alive(self)) {
        sw_fail(err, SW_ERR_DEVICE, "the Runtime of this %s was closed", self->kind->name);
        return NULL;
    }
    return self->model;
}

static void model_unlock(ModelObject *self)
{
    PyThread_release_lock(rt_of(self)->lock);
}

int swpy_model_run(ModelObject *self, swpy_locked_fn fn, void *ctx)
{
    sw_error err = {SW_OK, ""};
    Py_BEGIN_ALLOW_THREADS
    if (model_lock(self, &err))
        fn(ctx, &err);
    model_unlock(self);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    return 0;
}

void *swpy_model_open(ModelObject *self)
{
    if (!self->model) {
        PyErr_Format(SwModelError, "this %s is closed", self->kind ? self->kind->name : "model");
        return NULL;
    }
    return self->model;
}

static void release(ModelObject *self)
{
    if (!self->model)
        return;
    RuntimeObject *rt = rt_of(self);
    swpy_runtime_lock(rt);
    if (self->kind->free_parts)
        self->kind->free_parts(self);
    swpy_model_alive(self);
    self->kind->destroy(self->model);
    self->model = NULL;
    PyThread_release_lock(rt->lock);
    if (self->kind->released)
        self->kind->released(self);
}

void swpy_model_dealloc(ModelObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->runtime)
        release(self);
    Py_CLEAR(self->runtime);
    swpy_type_free((PyObject *)self);
    Py_DECREF(tp);
}

int swpy_model_traverse(ModelObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->runtime);
    return 0;
}

PyObject *swpy_model_close(ModelObject *self, PyObject *unused)
{
    if (self->runtime)
        release(self);
    Py_RETURN_NONE;
}

PyObject *swpy_model_enter(PyObject *self, PyObject *unused)
{
    return swpy_new_ref(self);
}

PyObject *swpy_model_exit(ModelObject *self, PyObject *args)
{
    if (self->runtime)
        release(self);
    Py_RETURN_FALSE;
}

PyObject *swpy_model_get_closed(ModelObject *self, void *closure)
{
    return PyBool_FromLong(self->model == NULL);
}

PyGetSetDef swpy_model_getset[] = {
    SWPY_MODEL_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

int swpy_model_add_type(PyObject *module, const char *name, PyType_Spec *spec)
{
    PyObject *t = PyType_FromSpec(spec);
    if (!t)
        return -1;
    if (PyModule_AddObject(module, name, t) != 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}
