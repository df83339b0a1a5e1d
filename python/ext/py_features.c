/* Features across the edge: Whisper's log-mel, its filterbank, and the
 * Kaldi fbank of the speaker-embedding models. */
#include "py_common.h"

#include <stdlib.h>

#include "fbank.h"
#include "mel.h"

/* Long inputs get a worker pool of `threads` (0: one per CPU; the Pipeline
 * passes its own threads=) for the call; it is made and joined inside the
 * call, so no thread outlives it (a later fork() stays safe). */
static sw_threadpool *pool_for(size_t n_samples, int threads)
{
    return n_samples >= 16000 * 10 && threads != 1 ? sw_threadpool_create(threads) : NULL;
}

/* One feature's computation over samples x[0..n), on the pool tp (NULL: this
 * thread); out is malloc'd, `frames` rows or columns of it. */
typedef sw_status (*feature_fn)(const void *options, const float *x, size_t n, sw_threadpool *tp,
                                float **out, size_t *frames, sw_error *err);

/* Every feature's path across the edge: `obj` as float32 samples, the GIL
 * released around fn on a pool for n + padding samples, the result as a
 * NumPy array [frames, width] ([width, frames] with frames_last). */
static PyObject *compute_feature(PyObject *obj, size_t padding, int threads, feature_fn fn,
                                 const void *options, const char *name, npy_intp width,
                                 int frames_last)
{
    PyArrayObject *arr = swpy_float32_array(obj, "samples", 1, 1);
    if (!arr)
        return NULL;
    float *out = NULL;
    size_t frames = 0;
    sw_error err = {SW_OK, ""};
    const float *x = PyArray_DATA(arr);
    size_t n = (size_t)PyArray_DIM(arr, 0);
    Py_BEGIN_ALLOW_THREADS
    sw_threadpool *tp = pool_for(n + padding, threads);
    fn(options, x, n, tp, &out, &frames, &err);
    sw_threadpool_destroy(tp);
    Py_END_ALLOW_THREADS
    Py_DECREF(arr);
    if (err.code != SW_OK)
        return swpy_raise(&err, name);
    npy_intp dims[2] = {(npy_intp)frames, width};
    if (frames_last) {
        dims[0] = width;
        dims[1] = (npy_intp)frames;
    }
    return swpy_array_from_malloc(out, 2, dims);
}

static int check_threads(int threads)
{
    if (threads >= 0)
        return 0;
    PyErr_Format(SwOptionError, "threads must be >= 0 (0: one per CPU), got %d", threads);
    return -1;
}

typedef struct log_mel_options {
    size_t padding;
    int n_mels;
} log_mel_options;

static sw_status log_mel(const void *options, const float *x, size_t n, sw_threadpool *tp,
                         float **out, size_t *frames, sw_error *err)
{
    const log_mel_options *o = options;
    return sw_log_mel(x, n, o->padding, o->n_mels, tp, out, frames, err);
}

static PyObject *py_log_mel(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"samples", "n_mels", "padding", "threads", NULL};
    PyObject *obj;
    int n_mels = 80, threads = 0;
    Py_ssize_t padding = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ini:log_mel_spectrogram", kwlist, &obj,
                                     &n_mels, &padding, &threads) ||
        check_threads(threads) != 0)
        return NULL;
    if (padding < 0)
        return PyErr_Format(SwOptionError, "padding must be >= 0, got %zd", padding);
    log_mel_options o = {(size_t)padding, n_mels};
    return compute_feature(obj, o.padding, threads, log_mel, &o, "log_mel_spectrogram", n_mels, 1);
}

static sw_status mel_power(const void *options, const float *x, size_t n, sw_threadpool *tp,
                           float **out, size_t *frames, sw_error *err)
{
    return sw_mel_power(x, n, *(const int *)options, tp, out, frames, err);
}

static PyObject *py_mel_power(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"samples", "n_mels", "threads", NULL};
    PyObject *obj;
    int n_mels = 40, threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ii:mel_power_spectrogram", kwlist, &obj,
                                     &n_mels, &threads) ||
        check_threads(threads) != 0)
        return NULL;
    return compute_feature(obj, 0, threads, mel_power, &n_mels, "mel_power_spectrogram", n_mels, 0);
}

static PyObject *py_mel_filters(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"n_mels", "n_fft", "sample_rate", NULL};
    int n_mels = 80, n_fft = 400, sample_rate = 16000;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|iii:mel_filters", kwlist, &n_mels, &n_fft,
                                     &sample_rate))
        return NULL;
    float *out = NULL;
    sw_error err = {SW_OK, ""};
    if (sw_mel_filters(sample_rate, n_fft, n_mels, &out, &err) != SW_OK)
        return swpy_raise(&err, "mel_filters");
    npy_intp dims[2] = {n_mels, n_fft / 2 + 1};
    return swpy_array_from_malloc(out, 2, dims);
}

/* The fbank's options, and the threads of the call (NULL where the caller
 * makes no pool). */
static int parse_fbank_options(PyObject *kwargs, sw_fbank_options *o, int *threads)
{
    *o = sw_fbank_default_options();
    int unused = 0;
    if (!threads)
        threads = &unused;
    *threads = 0;
    if (!kwargs)
        return 0;
    static char *kwlist[] = {"sample_rate", "num_mel_bins",  "frame_length_ms", "frame_shift_ms",
                             "low_freq",    "high_freq",     "preemphasis",     "remove_dc_offset",
                             "input_scale", "subtract_mean", "povey_window",    "threads",
                             NULL};
    PyObject *empty = PyTuple_New(0);
    if (!empty)
        return -1;
    int ok = PyArg_ParseTupleAndKeywords(
        empty, kwargs, "|iifffffpfppi:fbank", kwlist, &o->sample_rate, &o->num_mel_bins,
        &o->frame_length_ms, &o->frame_shift_ms, &o->low_freq, &o->high_freq, &o->preemphasis,
        &o->remove_dc_offset, &o->input_scale, &o->subtract_mean, &o->povey_window, threads);
    Py_DECREF(empty);
    return ok ? check_threads(*threads) : -1;
}

static sw_status fbank(const void *options, const float *x, size_t n, sw_threadpool *tp,
                       float **out, size_t *frames, sw_error *err)
{
    return sw_fbank(x, n, options, tp, out, frames, err);
}

static PyObject *py_fbank(PyObject *self, PyObject *args, PyObject *kwargs)
{
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O:fbank", &obj))
        return NULL;
    sw_fbank_options o;
    int threads;
    if (parse_fbank_options(kwargs, &o, &threads) != 0)
        return NULL;
    return compute_feature(obj, 0, threads, fbank, &o, "fbank", o.num_mel_bins, 0);
}

static PyObject *py_kaldi_mel_banks(PyObject *self, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_Size(args) != 0)
        return PyErr_Format(PyExc_TypeError, "kaldi_mel_banks takes keyword arguments only");
    sw_fbank_options o;
    if (parse_fbank_options(kwargs, &o, NULL) != 0)
        return NULL;
    float *out = NULL;
    int bins = 0;
    sw_error err = {SW_OK, ""};
    if (sw_kaldi_mel_banks(&o, &out, &bins, &err) != SW_OK)
        return swpy_raise(&err, "kaldi_mel_banks");
    npy_intp dims[2] = {o.num_mel_bins, bins};
    return swpy_array_from_malloc(out, 2, dims);
}

static PyMethodDef feature_methods[] = {
    {"log_mel_spectrogram", (PyCFunction)(void (*)(void))py_log_mel, METH_VARARGS | METH_KEYWORDS,
     "log_mel_spectrogram(samples, n_mels=80, padding=0, threads=0) -> float32 [n_mels, frames]"},
    {"mel_power_spectrogram", (PyCFunction)(void (*)(void))py_mel_power,
     METH_VARARGS | METH_KEYWORDS,
     "mel_power_spectrogram(samples, n_mels=40, threads=0) -> float32 [frames, n_mels], no log"},
    {"mel_filters", (PyCFunction)(void (*)(void))py_mel_filters, METH_VARARGS | METH_KEYWORDS,
     "mel_filters(n_mels=80, n_fft=400, sample_rate=16000) -> Slaney mel filterbank"},
    {"fbank", (PyCFunction)(void (*)(void))py_fbank, METH_VARARGS | METH_KEYWORDS,
     "fbank(samples, threads=0, **options) -> float32 [frames, num_mel_bins] (Kaldi style)"},
    {"kaldi_mel_banks", (PyCFunction)(void (*)(void))py_kaldi_mel_banks,
     METH_VARARGS | METH_KEYWORDS, "kaldi_mel_banks(**options) -> the fbank's filters"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_features(PyObject *module)
{
    return PyModule_AddFunctions(module, feature_methods);
}
