/* saywho._core: decode_file and resample, the audio input of the package. */
#include "py_common.h"

#include <stdlib.h>

#include "decode.h"

static PyObject *samples_to_array(float *data, size_t n)
{
    npy_intp dims[1] = {(npy_intp)n};
    return swpy_array_from_malloc(data, 1, dims);
}

static PyObject *py_decode_file(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "sample_rate", "spill_fd", "spill_after", NULL};
    PyObject *path = NULL;
    int sample_rate = 0;
    int spill_fd = -1;
    Py_ssize_t spill_after = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&i|in:decode_file", kwlist,
                                     PyUnicode_FSConverter, &path, &sample_rate, &spill_fd,
                                     &spill_after))
        return NULL;
    if (spill_after < 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "spill_after must be >= 0");
        return NULL;
    }
    const char *cpath = PyBytes_AsString(path);
    float *data = NULL;
    size_t n = 0;
    sw_error err = {0};
    sw_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sw_audio_decode_file_spill(cpath, sample_rate, spill_fd, (size_t)spill_after, &data, &n,
                                    &err);
    Py_END_ALLOW_THREADS
    if (st != SW_OK) {
        swpy_raise(&err, cpath);
        Py_DECREF(path);
        return NULL;
    }
    Py_DECREF(path);
    if (data == NULL) /* spilled: the samples are in the file */
        return PyLong_FromSize_t(n);
    return samples_to_array(data, n);
}

static PyObject *py_resample(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "in_rate", "out_rate", NULL};
    PyObject *obj = NULL;
    int in_rate = 0, out_rate = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oii:resample", kwlist, &obj, &in_rate,
                                     &out_rate))
        return NULL;
    PyArrayObject *arr = swpy_float32_array(obj, "audio array", 1, 2);
    if (!arr)
        return NULL;
    size_t frames = (size_t)PyArray_DIM(arr, 0);
    npy_intp nch = PyArray_NDIM(arr) == 2 ? PyArray_DIM(arr, 1) : 1;
    int channels = nch > SW_AUDIO_MAX_CHANNELS ? SW_AUDIO_MAX_CHANNELS + 1 : (int)nch;
    const float *in = (const float *)PyArray_DATA(arr);
    float *data = NULL;
    size_t n = 0;
    sw_error err = {0};
    sw_status st;
    Py_BEGIN_ALLOW_THREADS
    st = sw_audio_resample(in, frames, channels, in_rate, out_rate, &data, &n, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(arr);
    if (st != SW_OK)
        return swpy_raise(&err, "audio array");
    return samples_to_array(data, n);
}

static PyMethodDef audio_methods[] = {
    {"decode_file", (PyCFunction)(void (*)(void))py_decode_file, METH_VARARGS | METH_KEYWORDS,
     "decode_file(path, sample_rate, spill_fd=-1, spill_after=0) -> numpy.ndarray | int\n\n"
     "Decodes the best audio stream of any file FFmpeg reads to mono float32\n"
     "at sample_rate Hz. Raises saywho.AudioError naming the file when it is\n"
     "missing, empty, not audio, has no audio stream or is corrupt. With\n"
     "spill_after > 0, a recording longer than spill_after samples is written\n"
     "to the file descriptor spill_fd (native float32) and the number of\n"
     "samples written is returned instead of an array."},
    {"resample", (PyCFunction)(void (*)(void))py_resample, METH_VARARGS | METH_KEYWORDS,
     "resample(array, in_rate, out_rate) -> numpy.ndarray\n\n"
     "Mono float32 at out_rate from a 1-D (frames,) or 2-D (frames, channels)\n"
     "array at in_rate; channels are averaged. Raises saywho.AudioError for an\n"
     "empty array or non-finite samples, saywho.OptionError for bad rates."},
    {NULL, NULL, 0, NULL},
};

int swpy_init_audio(PyObject *module)
{
    return PyModule_AddFunctions(module, audio_methods);
}
