/* saywho._core.SileroModel: the voice activity detector of csrc/vad on a
 * Runtime's backend, a SWPY_KIND and a SWPY_MODEL_TYPE of py_model.h's one
 * life cycle. */
#include "py_model.h"

#include "silero.h"

/* Silero VAD v6. */
SWPY_KIND(silero, "SileroModel")

/* One run's arguments, for the function swpy_model_run calls without the GIL
 * under the Runtime's lock. */
typedef struct silero_call {
    sw_silero *model;
    const float *audio;
    npy_intp samples;
    int batch;
    unsigned long long recording;
    int resume;
    float *dst;
} silero_call;

static void silero_locked(void *ctx, sw_error *err)
{
    const silero_call *c = ctx;
    sw_silero_run(c->model, c->audio, c->samples, c->batch, c->recording, c->resume, c->dst, err);
}

static PyObject *silero_run(ModelObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"audio", "batch", "resume", "recording", NULL};
    PyObject *audio_obj;
    int batch = 4096, resume = 0;
    unsigned long long recording = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|ipK:run", kwlist, &audio_obj, &batch, &resume,
                                     &recording))
        return NULL;
    if (!swpy_model_open(self))
        return NULL;
    PyArrayObject *audio = swpy_float32_array(audio_obj, "audio", 1, 1);
    if (!audio)
        return NULL;
    npy_intp n = PyArray_DIM(audio, 0);
    PyObject *out = NULL;
    if (n % SW_SILERO_WINDOW)
        PyErr_Format(SwOptionError, "audio must be a multiple of %d samples, not %lld",
                     SW_SILERO_WINDOW, (long long)n);
    else if (batch < 1 || batch > 65536)
        PyErr_Format(SwOptionError, "batch must be 1 to 65536 windows, not %d", batch);
    else if (recording == 0)
        PyErr_SetString(SwOptionError, "recording must not be 0");
    else {
        npy_intp dims[1] = {n / SW_SILERO_WINDOW};
        out = PyArray_SimpleNew(1, dims, NPY_FLOAT32);
    }
    if (out) { /* n == 0 too: a fresh run resets the state */
        silero_call c = {.model = self->model,
                         .audio = PyArray_DATA(audio),
                         .samples = n,
                         .batch = batch,
                         .recording = recording,
                         .resume = resume,
                         .dst = PyArray_DATA((PyArrayObject *)out)};
        if (swpy_model_run(self, silero_locked, &c) != 0)
            Py_CLEAR(out);
    }
    Py_DECREF(audio);
    return out;
}

/* a method with keywords, as PyMethodDef stores it */
#define CF(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef silero_methods[] = {
    {"run", CF(silero_run), METH_VARARGS | METH_KEYWORDS,
     "run(audio float32 [samples], a multiple of 512, batch=4096, resume=False, recording=1) -> "
     "speech probabilities float32 [samples / 512], the LSTM state carried across all windows; "
     "resume=True goes on from the end of the previous call's audio (its state and last 64 "
     "samples), refused (OptionError) unless that call ran the same recording (the caller's "
     "number for it, not 0) and succeeded"},
    SWPY_MODEL_METHODS,
    {NULL, NULL, 0, NULL},
};

SWPY_MODEL_TYPE(
    silero, "SileroModel",
    "SileroModel(runtime, tensors: dict[str, ndarray])\n\n"
    "Silero VAD v6 on the runtime's device; tensors as saywho.audio.vad.load_silero reads "
    "them.")

int swpy_init_vad(PyObject *m)
{
    return swpy_model_add_type(m, "SileroModel", &silero_spec);
}
