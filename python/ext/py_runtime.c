/* saywho._core.Runtime: one open backend (CPU or CUDA) with its counted pools.
 * Python's Pipeline owns one; close() and dealloc return every byte. The ops
 * are exposed so that the same parity tests run on whichever device opened. */
#include "py_runtime.h"

#include <string.h>

#include "device.h"
#include "ops.h"

static int runtime_init(RuntimeObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"device", "cuda_library", "threads", "cublas_path", NULL};
    const char *device = "auto", *library = NULL, *cublas_path = NULL;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|sziz:Runtime", kwlist, &device, &library,
                                     &threads, &cublas_path))
        return -1;
    if (self->backend) {
        PyErr_SetString(PyExc_RuntimeError, "Runtime is already initialised");
        return -1;
    }
    if (threads < 0) {
        PyErr_Format(SwOptionError, "threads must be >= 0 (0: one per CPU), got %d", threads);
        return -1;
    }
    if (!self->lock && !(self->lock = PyThread_allocate_lock())) {
        PyErr_NoMemory();
        return -1;
    }
    sw_device_options opt = {device, library, cublas_path, threads};
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    Py_BEGIN_ALLOW_THREADS
    sw_device_open(&opt, &b, self->fallback, sizeof self->fallback, &err);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        swpy_raise(&err, NULL);
        return -1;
    }
    self->backend = b;
    self->threads = threads;
    return 0;
}

static void runtime_release(RuntimeObject *self)
{
    if (!self->backend)
        return;
    sw_backend *b = self->backend;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    self->backend = NULL;
    PyThread_release_lock(self->lock);
    b->destroy(b);
    Py_END_ALLOW_THREADS
}

static void runtime_dealloc(RuntimeObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    runtime_release(self);
    if (self->lock)
        PyThread_free_lock(self->lock);
    swpy_type_free((PyObject *)self);
    Py_DECREF(tp);
}

static PyObject *runtime_close(RuntimeObject *self, PyObject *unused)
{
    runtime_release(self);
    Py_RETURN_NONE;
}

static int require_open(RuntimeObject *self)
{
    if (!self->backend) {
        PyErr_SetString(SwDeviceError, "this Runtime is closed");
        return -1;
    }
    return 0;
}

static int set_item(PyObject *d, const char *key, size_t v)
{
    PyObject *o = PyLong_FromSize_t(v);
    int rc = o ? PyDict_SetItemString(d, key, o) : -1;
    Py_XDECREF(o);
    return rc;
}

static PyObject *runtime_memory(RuntimeObject *self, PyObject *unused)
{
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    sw_pool_stats s;
    memset(&s, 0, sizeof s);
    sw_device_info info;
    memset(&info, 0, sizeof info);
    if (self->backend) {
        sw_error err = {SW_OK, ""};
        s = self->backend->memory(self->backend);
        self->backend->device_info(self->backend, &info, &err);
    }
    if (set_item(d, "allocated", s.allocated) || set_item(d, "reserved", s.reserved) ||
        set_item(d, "peak_allocated", s.peak_allocated) ||
        set_item(d, "peak_reserved", s.peak_reserved) ||
        set_item(d, "live_blocks", s.live_blocks) || set_item(d, "total_allocs", s.total_allocs) ||
        set_item(d, "total", info.total_bytes) || set_item(d, "free", info.free_bytes)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

/* The device backend's counters (backend.h) as a dict, then zeroed when
 * reset is true; None on the CPU, where nothing crosses to a device. The
 * lock orders the read after any op another thread is running. */
static PyObject *runtime_counters(RuntimeObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"reset", NULL};
    int reset = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:counters", kwlist, &reset))
        return NULL;
    if (require_open(self))
        return NULL;
    if (!self->backend->counters)
        Py_RETURN_NONE;
    sw_backend_counters n;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    self->backend->counters(self->backend, &n, reset);
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    PyObject *d = PyDict_New();
    if (!d)
        return NULL;
    if (set_item(d, "launches", n.launches) || set_item(d, "graph_launches", n.graph_launches) ||
        set_item(d, "host_syncs", n.host_syncs) || set_item(d, "bytes_down", n.bytes_down) ||
        set_item(d, "bytes_up", n.bytes_up)) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *runtime_trim(RuntimeObject *self, PyObject *unused)
{
    if (require_open(self))
        return NULL;
    self->backend->trim(self->backend);
    Py_RETURN_NONE;
}

static PyObject *runtime_get_device(RuntimeObject *self, void *closure)
{
    if (!self->backend)
        Py_RETURN_NONE;
    return PyUnicode_FromString(self->backend->kind == SW_DEVICE_CUDA ? "cuda" : "cpu");
}

static PyObject *runtime_get_device_name(RuntimeObject *self, void *closure)
{
    if (require_open(self))
        return NULL;
    sw_device_info info;
    sw_error err = {SW_OK, ""};
    if (self->backend->device_info(self->backend, &info, &err) != SW_OK)
        return swpy_raise(&err, "device_info");
    return PyUnicode_FromString(info.name);
}

static PyObject *runtime_get_fallback(RuntimeObject *self, void *closure)
{
    if (!self->fallback[0])
        Py_RETURN_NONE;
    return PyUnicode_FromString(self->fallback);
}

static PyObject *runtime_get_closed(RuntimeObject *self, void *closure)
{
    return PyBool_FromLong(self->backend == NULL);
}

/* ---- ops: NumPy in, device tensors, NumPy out ---- */

#define MAX_OPERANDS 4

typedef struct op_call {
    sw_tensor in[MAX_OPERANDS];
    int n_in;
    sw_tensor out;
} op_call;

static void op_call_free(op_call *c)
{
    for (int i = 0; i < c->n_in; i++)
        sw_tensor_free(&c->in[i]);
    sw_tensor_free(&c->out);
}

static int upload_array(sw_backend *b, PyArrayObject *arr, sw_tensor *t, sw_error *err)
{
    int64_t shape[SW_MAX_DIMS];
    int nd = PyArray_NDIM(arr);
    for (int i = 0; i < nd; i++)
        shape[i] = PyArray_DIM(arr, i);
    if (sw_tensor_new(b, SW_F32, nd, shape, t, err) != SW_OK)
        return -1;
    return b->upload(b, t->data, PyArray_DATA(arr), sw_tensor_nbytes(t), err) == SW_OK ? 0 : -1;
}

enum {
    OP_MATMUL,
    OP_ADD,
    OP_MUL,
    OP_SCALE,
    OP_GELU,
    OP_SOFTMAX,
    OP_LAYERNORM,
    OP_CONVERT,
    OP_LSTM,
    OP_CONV1D
};

typedef struct op_args {
    int op;
    int trans_b;
    float alpha, beta, s, eps;
    sw_dtype to;
    int stride, pad; /* conv1d */
} op_args;

static sw_status run_op(sw_backend *b, op_call *c, const op_args *a, sw_error *err)
{
    switch (a->op) {
    case OP_MATMUL:
        return sw_matmul(&c->in[0], &c->in[1], &c->out, a->trans_b, a->alpha, 0.0f, err);
    case OP_ADD: return sw_add(&c->in[0], &c->in[1], &c->out, err);
    case OP_MUL: return sw_mul(&c->in[0], &c->in[1], &c->out, err);
    case OP_SCALE: return sw_scale(&c->in[0], a->s, &c->out, err);
    case OP_GELU: return sw_gelu(&c->in[0], &c->out, err);
    case OP_SOFTMAX: return sw_softmax(&c->in[0], &c->out, err);
    case OP_LAYERNORM: return sw_layernorm(&c->in[0], &c->in[1], &c->in[2], a->eps, &c->out, err);
    case OP_LSTM: return sw_lstm(&c->in[0], &c->in[1], &c->in[2], &c->in[3], &c->out, err);
    case OP_CONV1D:
        return sw_conv1d(&c->in[0], &c->in[1], &c->in[2], a->stride, a->pad, &c->out, err);
    case OP_CONVERT: {
        /* round trip through the narrow type so NumPy sees float32 */
        sw_tensor narrow;
        if (sw_tensor_new(b, a->to, c->in[0].ndim, c->in[0].shape, &narrow, err) != SW_OK)
            return err->code;
        if (sw_convert(&c->in[0], &narrow, err) == SW_OK)
            sw_convert(&narrow, &c->out, err);
        sw_tensor_free(&narrow);
        return err->code;
    }
    }
    return sw_fail(err, SW_ERR_INTERNAL, "unknown op %d", a->op);
}

static PyObject *execute(RuntimeObject *self, PyObject **inputs, int n_in, const op_args *a)
{
    if (require_open(self))
        return NULL;
    PyArrayObject *arrs[MAX_OPERANDS] = {NULL};
    PyObject *result = NULL;
    for (int i = 0; i < n_in; i++)
        if (!(arrs[i] = swpy_float32_array(inputs[i], "operand", 1, SW_MAX_DIMS)))
            goto done;
    npy_intp out_dims[SW_MAX_DIMS];
    int out_nd = PyArray_NDIM(arrs[0]);
    memcpy(out_dims, PyArray_DIMS(arrs[0]), sizeof(npy_intp) * (size_t)out_nd);
    if (a->op == OP_MATMUL) {
        if (out_nd != 2 || PyArray_NDIM(arrs[1]) != 2) {
            PyErr_SetString(SwOptionError, "matmul takes two matrices");
            goto done;
        }
        out_dims[1] = PyArray_DIM(arrs[1], a->trans_b ? 0 : 1);
    }
    if (a->op == OP_CONV1D) { /* [B, T, C_in] -> [B, T_out, C_out]; sw_conv1d checks the rest */
        if (out_nd != 3 || PyArray_NDIM(arrs[1]) != 3) {
            PyErr_SetString(SwOptionError, "conv1d takes x [B, T, C_in], w [C_out, C_in, K] "
                                           "and bias [C_out]");
            goto done;
        }
        npy_intp span = PyArray_DIM(arrs[0], 1) + 2 * a->pad - PyArray_DIM(arrs[1], 2);
        out_dims[1] = span < 0 ? 0 : span / a->stride + 1;
        out_dims[2] = PyArray_DIM(arrs[1], 0);
    }
    if (a->op == OP_LSTM) { /* [B, T, in] -> [B, T, D * H]; sw_lstm checks the rest */
        if (out_nd != 3 || PyArray_NDIM(arrs[1]) != 3 || PyArray_NDIM(arrs[2]) != 3) {
            PyErr_SetString(SwOptionError, "lstm takes x [B, T, in], w_ih [D, 4H, in], "
                                           "w_hh [D, 4H, H] and bias [D, 4H]");
            goto done;
        }
        out_dims[2] = PyArray_DIM(arrs[1], 0) * PyArray_DIM(arrs[2], 2);
    }
    result = PyArray_SimpleNew(out_nd, out_dims, NPY_FLOAT32);
    if (!result)
        goto done;
    op_call c;
    memset(&c, 0, sizeof c);
    sw_error err = {SW_OK, ""};
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    sw_backend *b = self->backend;
    if (!b) {
        sw_fail(&err, SW_ERR_DEVICE, "this Runtime was closed");
    } else {
        int ok = 1;
        for (int i = 0; i < n_in && ok; i++, c.n_in++)
            ok = upload_array(b, arrs[i], &c.in[i], &err) == 0;
        int64_t shape[SW_MAX_DIMS];
        for (int i = 0; i < out_nd; i++)
            shape[i] = out_dims[i];
        if (ok && sw_tensor_new(b, SW_F32, out_nd, shape, &c.out, &err) == SW_OK &&
            run_op(b, &c, a, &err) == SW_OK)
            b->download(b, PyArray_DATA((PyArrayObject *)result), c.out.data,
                        sw_tensor_nbytes(&c.out), &err);
        if (err.code == SW_OK)
            b->synchronize(b, &err);
        op_call_free(&c);
    }
    PyThread_release_lock(self->lock);
    Py_END_ALLOW_THREADS
    if (err.code != SW_OK) {
        Py_CLEAR(result);
        swpy_raise(&err, NULL);
    }
done:
    for (int i = 0; i < n_in; i++)
        Py_XDECREF(arrs[i]);
    return result;
}

static PyObject *runtime_matmul(RuntimeObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"a", "b", "trans_b", "alpha", NULL};
    PyObject *in[2];
    op_args a = {OP_MATMUL, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pf:matmul", kwlist, &in[0], &in[1],
                                     &a.trans_b, &a.alpha))
        return NULL;
    return execute(self, in, 2, &a);
}

static PyObject *binary(RuntimeObject *self, PyObject *args, int op, const char *fmt)
{
    PyObject *in[2];
    op_args a = {op, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (!PyArg_ParseTuple(args, fmt, &in[0], &in[1]))
        return NULL;
    return execute(self, in, 2, &a);
}

static PyObject *runtime_add(RuntimeObject *self, PyObject *args)
{
    return binary(self, args, OP_ADD, "OO:add");
}

static PyObject *runtime_mul(RuntimeObject *self, PyObject *args)
{
    return binary(self, args, OP_MUL, "OO:mul");
}

static PyObject *runtime_scale(RuntimeObject *self, PyObject *args)
{
    PyObject *in[1];
    op_args a = {OP_SCALE, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (!PyArg_ParseTuple(args, "Of:scale", &in[0], &a.s))
        return NULL;
    return execute(self, in, 1, &a);
}

static PyObject *unary(RuntimeObject *self, PyObject *arg, int op)
{
    op_args a = {op, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    return execute(self, &arg, 1, &a);
}

static PyObject *runtime_gelu(RuntimeObject *self, PyObject *arg)
{
    return unary(self, arg, OP_GELU);
}

static PyObject *runtime_softmax(RuntimeObject *self, PyObject *arg)
{
    return unary(self, arg, OP_SOFTMAX);
}

static PyObject *runtime_layernorm(RuntimeObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "gamma", "beta", "eps", NULL};
    PyObject *in[3];
    op_args a = {OP_LAYERNORM, 0, 1.0f, 0.0f, 0.0f, 1e-5f, SW_F32, 1, 0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|f:layernorm", kwlist, &in[0], &in[1],
                                     &in[2], &a.eps))
        return NULL;
    return execute(self, in, 3, &a);
}

static PyObject *runtime_lstm(RuntimeObject *self, PyObject *args)
{
    PyObject *in[4];
    op_args a = {OP_LSTM, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (!PyArg_ParseTuple(args, "OOOO:lstm", &in[0], &in[1], &in[2], &in[3]))
        return NULL;
    return execute(self, in, 4, &a);
}

static PyObject *runtime_conv1d(RuntimeObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"x", "w", "bias", "stride", "pad", NULL};
    PyObject *in[3];
    op_args a = {OP_CONV1D, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|ii:conv1d", kwlist, &in[0], &in[1], &in[2],
                                     &a.stride, &a.pad))
        return NULL;
    if (a.stride < 1 || a.pad < 0)
        return PyErr_Format(SwOptionError, "conv1d: stride must be >= 1 and pad >= 0");
    return execute(self, in, 3, &a);
}

static PyObject *runtime_round_trip(RuntimeObject *self, PyObject *args)
{
    PyObject *in[1];
    const char *dtype;
    if (!PyArg_ParseTuple(args, "Os:round_trip", &in[0], &dtype))
        return NULL;
    op_args a = {OP_CONVERT, 0, 1.0f, 0.0f, 0.0f, 0.0f, SW_F32, 1, 0};
    if (strcmp(dtype, "float16") == 0)
        a.to = SW_F16;
    else if (strcmp(dtype, "bfloat16") == 0)
        a.to = SW_BF16;
    else if (strcmp(dtype, "float32") != 0)
        return PyErr_Format(SwOptionError, "dtype must be float16, bfloat16 or float32, not %s",
                            dtype);
    return execute(self, in, 1, &a);
}

static PyObject *runtime_enter(PyObject *self, PyObject *unused)
{
    return swpy_new_ref((PyObject *)self);
}

static PyObject *runtime_exit(RuntimeObject *self, PyObject *args)
{
    runtime_release(self);
    Py_RETURN_FALSE;
}

#define KW    (METH_VARARGS | METH_KEYWORDS)
#define CF(f) ((PyCFunction)(void (*)(void))(f))
static PyMethodDef runtime_methods[] = {
    {"close", CF(runtime_close), METH_NOARGS, "Return every byte; idempotent."},
    {"memory", CF(runtime_memory), METH_NOARGS, "Pool counts and device memory, in bytes."},
    {"trim", CF(runtime_trim), METH_NOARGS, "Give cached blocks back to the system."},
    {"counters", CF(runtime_counters), KW,
     "counters(reset=False): the device's launches, graph_launches, host_syncs, bytes_down and "
     "bytes_up since it opened or was last reset, then zeroed if reset; None on the CPU"},
    {"matmul", CF(runtime_matmul), KW, "matmul(a, b, trans_b=False, alpha=1.0)"},
    {"add", CF(runtime_add), METH_VARARGS, "add(a, b): b has a's shape or is one row"},
    {"mul", CF(runtime_mul), METH_VARARGS, "mul(a, b)"},
    {"scale", CF(runtime_scale), METH_VARARGS, "scale(a, s)"},
    {"gelu", CF(runtime_gelu), METH_O, "gelu(a), the erf form"},
    {"softmax", CF(runtime_softmax), METH_O, "softmax over the last axis"},
    {"layernorm", CF(runtime_layernorm), KW, "layernorm(x, gamma, beta, eps=1e-5)"},
    {"conv1d", CF(runtime_conv1d), KW,
     "conv1d(x [B, T, C_in], w [C_out, C_in, K], bias [C_out], stride=1, pad=0): time-major, "
     "zero padding"},
    {"lstm", CF(runtime_lstm), METH_VARARGS,
     "lstm(x, w_ih, w_hh, bias): one (bi)LSTM layer, gates i, f, g, o, zero initial state"},
    {"round_trip", CF(runtime_round_trip), METH_VARARGS,
     "round_trip(a, dtype): float32 -> dtype -> float32 on the device"},
    {"__enter__", CF(runtime_enter), METH_NOARGS, NULL},
    {"__exit__", CF(runtime_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *runtime_get_threads(RuntimeObject *self, void *closure)
{
    return PyLong_FromLong(self->threads);
}

static PyGetSetDef runtime_getset[] = {
    {"device", (getter)runtime_get_device, NULL, "\"cpu\" or \"cuda\"; None once closed", NULL},
    {"device_name", (getter)runtime_get_device_name, NULL, "what the device calls itself", NULL},
    {"fallback_reason", (getter)runtime_get_fallback, NULL,
     "why device=\"auto\" runs on the CPU, or None", NULL},
    {"closed", (getter)runtime_get_closed, NULL, "whether close() ran", NULL},
    {"threads", (getter)runtime_get_threads, NULL,
     "the CPU threads asked for (0: one per CPU), for the stages that run on the CPU", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot runtime_slots[] = {
    {Py_tp_doc, "Runtime(device=\"auto\", cuda_library=None, threads=0, cublas_path=None)"},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, runtime_init},
    {Py_tp_dealloc, runtime_dealloc},
    {Py_tp_methods, runtime_methods},
    {Py_tp_getset, runtime_getset},
    {0, NULL},
};

static PyType_Spec runtime_spec = {
    "saywho._core.Runtime", sizeof(RuntimeObject), 0, Py_TPFLAGS_DEFAULT, runtime_slots,
};

static PyObject *py_cuda_probe(PyObject *self, PyObject *args)
{
    const char *library = NULL, *cublas_path = NULL;
    if (!PyArg_ParseTuple(args, "|zz:cuda_probe", &library, &cublas_path))
        return NULL;
    sw_error err = {SW_OK, ""};
    Py_BEGIN_ALLOW_THREADS
    sw_cuda_probe(library, cublas_path, &err);
    Py_END_ALLOW_THREADS
    if (err.code == SW_OK)
        return Py_BuildValue("(Os)", Py_True, "");
    return Py_BuildValue("(Os)", Py_False, err.msg);
}

/* The device string as the core reads it: Python checks it here, so "cpu",
 * "cuda:N" and the rest mean one thing on both sides of the edge. */
static PyObject *py_parse_device(PyObject *self, PyObject *arg)
{
    static const char *const kinds[] = {"auto", "cpu", "cuda", "cuda-emulated"};
    if (!PyUnicode_Check(arg))
        return PyErr_Format(SwOptionError,
                            "device must be a string such as \"auto\" or \"cuda:0\", not %R", arg);
    const char *spec; /* PyUnicode_AsUTF8AndSize is not in 3.9's limited API */
    if (!PyArg_Parse(arg, "s", &spec))
        return NULL;
    sw_device_request kind;
    int index;
    sw_error err = {SW_OK, ""};
    if (sw_device_parse(spec, &kind, &index, &err) != SW_OK)
        return swpy_raise(&err, NULL);
    return Py_BuildValue("(si)", kinds[kind], index);
}

static PyMethodDef runtime_functions[] = {
    {"parse_device", py_parse_device, METH_O,
     "parse_device(spec) -> (kind, index): kind is \"auto\", \"cpu\", \"cuda\" or "
     "\"cuda-emulated\"; OptionError for anything else"},
    {"cuda_probe", py_cuda_probe, METH_VARARGS,
     "cuda_probe(library=None, cublas_path=None) -> (usable, reason): can the CUDA backend "
     "open?"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_runtime(PyObject *module)
{
    PyObject *type = PyType_FromSpec(&runtime_spec);
    if (!type)
        return -1;
    if (PyModule_AddObject(module, "Runtime", type) != 0) {
        Py_DECREF(type);
        return -1;
    }
    return PyModule_AddFunctions(module, runtime_functions);
}
