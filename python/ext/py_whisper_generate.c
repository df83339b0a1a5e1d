/* saywho._core.whisper_generate: Whisper's generation (csrc/whisper/
 * whisper_generate.h) for n windows in one call.
 *
 * On a _core.WhisperModel it runs in the core without the GIL. Any other
 * object with new_state(encoder_output, n) (states with decode(tokens) and
 * reorder(indices)) is driven through the same C search, called back for
 * each step: that is how the rules and searches are tested against a fake
 * network; it is not a fast path. */
#include "py_whisper.h"

#include <string.h>

#include "whisper_generate.h"
#include "whisper_word_attention.h"

/* ---- a Python network, called back with the GIL held ---- */

typedef struct py_net {
    PyObject *model, *enc;
    int n_vocab;
} py_net;

static sw_status py_failed(sw_error *err, const char *what)
{
    return sw_fail(err, SW_ERR_INTERNAL, "the Python decoder's %s failed", what);
}

static sw_status py_state_new(void *ctx, int n_rows, void **state, sw_error *err)
{
    py_net *net = ctx;
    PyObject *st = PyObject_CallMethod(net->model, "new_state", "Oi", net->enc, n_rows);
    if (!st)
        return py_failed(err, "new_state");
    *state = st;
    return SW_OK;
}

static void py_state_free(void *ctx, void *state)
{
    (void)ctx;
    Py_XDECREF((PyObject *)state);
}

static PyObject *int32_array(const int32_t *data, int ndim, const npy_intp *dims)
{
    PyObject *a = PyArray_SimpleNew(ndim, dims, NPY_INT32);
    if (a)
        memcpy(PyArray_DATA((PyArrayObject *)a), data,
               (size_t)PyArray_SIZE((PyArrayObject *)a) * sizeof(int32_t));
    return a;
}

static sw_status py_decode(void *ctx, void *state, const int32_t *tokens, int n_rows, int n_tokens,
                           float *logits, sw_error *err)
{
    py_net *net = ctx;
    npy_intp dims[2] = {n_rows, n_tokens};
    PyObject *t = int32_array(tokens, 2, dims);
    PyObject *out = t ? PyObject_CallMethod((PyObject *)state, "decode", "O", t) : NULL;
    Py_XDECREF(t);
    PyArrayObject *arr =
        out ? (PyArrayObject *)PyArray_FROMANY(out, NPY_FLOAT32, 2, 2,
                                               NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_FORCECAST)
            : NULL;
    Py_XDECREF(out);
    if (!arr)
        return py_failed(err, "decode");
    if (PyArray_DIM(arr, 0) != n_rows || PyArray_DIM(arr, 1) != net->n_vocab) {
        Py_DECREF(arr);
        PyErr_Format(SwOptionError, "decode returned logits of another shape than [%d, %d]", n_rows,
                     net->n_vocab);
        return py_failed(err, "decode");
    }
    memcpy(logits, PyArray_DATA(arr), (size_t)n_rows * (size_t)net->n_vocab * sizeof(float));
    Py_DECREF(arr);
    return SW_OK;
}

static sw_status py_copy(void *ctx, void *dst, void *src, const int *index, int n, sw_error *err)
{
    (void)ctx;
    if (dst != src) /* copy_other is off for Python networks */
        return sw_fail(err, SW_ERR_INTERNAL, "Python decoder states are not copied");
    npy_intp dims[1] = {n};
    PyObject *a = PyArray_SimpleNew(1, dims, NPY_INT32);
    if (!a)
        return py_failed(err, "reorder");
    for (int i = 0; i < n; i++)
        ((int32_t *)PyArray_DATA((PyArrayObject *)a))[i] = index[i];
    PyObject *r = PyObject_CallMethod((PyObject *)dst, "reorder", "O", a);
    Py_DECREF(a);
    if (!r)
        return py_failed(err, "reorder");
    Py_DECREF(r);
    return SW_OK;
}

/* ---- arguments ---- */

typedef struct gen_args {
    sw_whisper_generate_params p;
    PyArrayObject *prompts, *lists[3];
    sw_whisper_generation *out;
    int n_windows, prompt_len;
} gen_args;

static PyArrayObject *int32_list(PyObject *obj, const char *name)
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(
        obj, NPY_INT32, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
    if (!a) {
        PyErr_Clear();
        PyErr_Format(SwOptionError, "%s must be a sequence of token ids", name);
    }
    return a;
}

static void do_generate(sw_whisper *model, const sw_whisper_audio *audio, void *ctx, sw_error *err)
{
    gen_args *a = ctx;
    sw_whisper_generate(model, audio, PyArray_DATA(a->prompts), a->n_windows, a->prompt_len, &a->p,
                        a->out, err);
}

/* [(hypotheses, scores, no_speech_prob, steps)] per window. */
static PyObject *results(const sw_whisper_generation *out, int n)
{
    PyObject *list = PyList_New(n);
    for (int w = 0; list && w < n; w++) {
        PyObject *hyps = PyList_New(out[w].n_hyp), *scores = PyList_New(out[w].n_hyp);
        for (int i = 0; hyps && scores && i < out[w].n_hyp; i++) {
            const sw_whisper_hypothesis *h = &out[w].hyp[i];
            PyObject *toks = PyList_New(h->n_tokens);
            for (int t = 0; toks && t < h->n_tokens; t++) {
                PyObject *v = PyLong_FromLong(h->tokens[t]);
                if (!v || PyList_SetItem(toks, t, v) != 0)
                    Py_CLEAR(toks);
            }
            PyObject *s = PyFloat_FromDouble(h->score);
            if (!toks || !s || PyList_SetItem(hyps, i, toks) != 0 ||
                PyList_SetItem(scores, i, s) != 0) {
                Py_XDECREF(s);
                Py_CLEAR(hyps);
            }
        }
        PyObject *ns = PyFloat_FromDouble(out[w].no_speech_prob);
        PyObject *steps = PyLong_FromLong(out[w].steps);
        PyObject *item =
            hyps && scores && ns && steps ? PyTuple_Pack(4, hyps, scores, ns, steps) : NULL;
        Py_XDECREF(hyps);
        Py_XDECREF(scores);
        Py_XDECREF(ns);
        Py_XDECREF(steps);
        if (!item || PyList_SetItem(list, w, item) != 0)
            Py_CLEAR(list);
    }
    return list;
}

static PyObject *py_whisper_generate(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"model",
                             "encoder_output",
                             "prompts",
                             "eot",
                             "sot",
                             "no_timestamps",
                             "no_speech",
                             "n_vocab",
                             "beam_size",
                             "patience",
                             "length_penalty",
                             "repetition_penalty",
                             "no_repeat_ngram_size",
                             "max_length",
                             "sampling_topk",
                             "sampling_temperature",
                             "num_hypotheses",
                             "return_scores",
                             "return_no_speech_prob",
                             "max_initial_timestamp_index",
                             "suppress_blank",
                             "suppress_tokens",
                             "suppress_ids",
                             "suppress_ids_begin",
                             "seed",
                             NULL};
    gen_args a;
    memset(&a, 0, sizeof a);
    a.p = sw_whisper_generate_default_params();
    PyObject *model, *enc, *prompts_obj, *lists_obj[3] = {NULL, NULL, NULL};
    int n_vocab = -1;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, "OOO|$iiiiiifffiiifippipOOOK:whisper_generate", kwlist, &model, &enc,
            &prompts_obj, &a.p.eot, &a.p.sot, &a.p.no_timestamps, &a.p.no_speech, &n_vocab,
            &a.p.beam_size, &a.p.patience, &a.p.length_penalty, &a.p.repetition_penalty,
            &a.p.no_repeat_ngram_size, &a.p.max_length, &a.p.sampling_topk,
            &a.p.sampling_temperature, &a.p.num_hypotheses, &a.p.return_scores,
            &a.p.return_no_speech_prob, &a.p.max_initial_timestamp_index, &a.p.suppress_blank,
            &lists_obj[0], &lists_obj[1], &lists_obj[2], &seed))
        return NULL;
    a.p.seed = seed;
    PyObject *result = NULL;
    const char *names[3] = {"suppress_tokens", "suppress_ids", "suppress_ids_begin"};
    a.prompts = (PyArrayObject *)PyArray_FROMANY(prompts_obj, NPY_INT32, 2, 2,
                                                 NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                     NPY_ARRAY_FORCECAST);
    if (!a.prompts) {
        PyErr_Clear();
        PyErr_SetString(SwOptionError, "prompts must be int32 token ids [n_windows, length]");
        goto done;
    }
    a.n_windows = (int)PyArray_DIM(a.prompts, 0);
    a.prompt_len = (int)PyArray_DIM(a.prompts, 1);
    if (a.n_windows < 1 || a.n_windows > 4096 || a.prompt_len < 1 || a.prompt_len > 1 << 16) {
        PyErr_SetString(SwOptionError, "prompts must be [n_windows, length], both positive");
        goto done;
    }
    for (int i = 0; i < 3; i++) {
        if (!lists_obj[i])
            continue;
        a.lists[i] = int32_list(lists_obj[i], names[i]);
        if (!a.lists[i])
            goto done;
    }
    if (a.lists[0]) {
        a.p.suppress_tokens = PyArray_DATA(a.lists[0]);
        a.p.n_suppress_tokens = (int)PyArray_DIM(a.lists[0], 0);
    }
    if (a.lists[1]) {
        a.p.suppress_ids = PyArray_DATA(a.lists[1]);
        a.p.n_suppress_ids = (int)PyArray_DIM(a.lists[1], 0);
    }
    if (a.lists[2]) {
        a.p.suppress_ids_begin = PyArray_DATA(a.lists[2]);
        a.p.n_suppress_ids_begin = (int)PyArray_DIM(a.lists[2], 0);
    }
    a.out = swpy_calloc((size_t)a.n_windows, sizeof *a.out);
    if (!a.out) {
        PyErr_NoMemory();
        goto done;
    }
    if (swpy_is_whisper_model(model)) {
        if (swpy_whisper_run(model, enc, do_generate, &a) != 0)
            goto done;
    } else {
        if (n_vocab < 1) {
            PyErr_SetString(SwOptionError, "n_vocab is needed for a Python network");
            goto done;
        }
        py_net net = {model, enc, n_vocab};
        sw_whisper_decoder dec = {&net,    n_vocab, py_state_new, py_state_free, py_decode,
                                  py_copy, 0,       NULL,         NULL,          0};
        sw_error err = {SW_OK, ""};
        sw_whisper_generate_with(&dec, PyArray_DATA(a.prompts), a.n_windows, a.prompt_len, &a.p,
                                 a.out, &err);
        if (err.code != SW_OK) {
            if (!PyErr_Occurred())
                swpy_raise(&err, NULL);
            goto done;
        }
    }
    result = results(a.out, a.n_windows);
done:
    if (a.out)
        sw_whisper_generation_free(a.out, a.n_windows);
    PyMem_Free(a.out);
    Py_XDECREF(a.prompts);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(a.lists[i]);
    return result;
}

/* ---- the forward pass word timestamps read ---- */

typedef struct word_attention_args {
    PyArrayObject *start, *text, *heads;
    int eot, no_timestamps, item;
    float *attention, *probs;
} word_attention_args;

static void do_word_attention(sw_whisper *model, const sw_whisper_audio *audio, void *ctx,
                              sw_error *err)
{
    word_attention_args *a = ctx;
    sw_whisper_audio *one = NULL; /* the item's view when audio is a batch */
    if (sw_whisper_audio_batch(audio) > 1 || a->item != 0) {
        if (sw_whisper_audio_item(audio, a->item, &one, err) != SW_OK)
            return;
        audio = one;
    }
    sw_whisper_word_attention(model, audio, PyArray_DATA(a->start), (int)PyArray_DIM(a->start, 0),
                              PyArray_DATA(a->text), (int)PyArray_DIM(a->text, 0), a->eot,
                              a->no_timestamps, PyArray_DATA(a->heads),
                              (int)PyArray_DIM(a->heads, 0), a->attention, a->probs, err);
    sw_whisper_audio_free(one);
}

static PyObject *py_whisper_word_attention(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"model", "encoder_output", "start", "text", "heads",
                             "eot",   "no_timestamps",  "item",  NULL};
    PyObject *model, *enc, *start_obj, *text_obj, *heads_obj;
    word_attention_args a;
    memset(&a, 0, sizeof a);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|$iii:whisper_word_attention", kwlist,
                                     &model, &enc, &start_obj, &text_obj, &heads_obj, &a.eot,
                                     &a.no_timestamps, &a.item))
        return NULL;
    PyObject *attention = NULL, *probs = NULL, *result = NULL;
    int flags = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST;
    a.start = (PyArrayObject *)PyArray_FROMANY(start_obj, NPY_INT32, 1, 1, flags);
    a.text = a.start ? (PyArrayObject *)PyArray_FROMANY(text_obj, NPY_INT32, 1, 1, flags) : NULL;
    a.heads = a.text ? (PyArrayObject *)PyArray_FROMANY(heads_obj, NPY_INT, 2, 2, flags) : NULL;
    if (!a.heads || PyArray_DIM(a.heads, 1) != 2 || PyArray_DIM(a.heads, 0) < 1) {
        PyErr_Clear();
        PyErr_SetString(SwOptionError,
                        "whisper_word_attention: start and text are token ids, heads "
                        "(layer, head) pairs");
        goto done;
    }
    if (!swpy_is_whisper_model(model)) {
        PyErr_SetString(PyExc_TypeError,
                        "whisper_word_attention needs a saywho._core.WhisperModel");
        goto done;
    }
    PyObject *dims = PyObject_GetAttrString(model, "dims");
    PyObject *ctx_obj = dims ? PyMapping_GetItemString(dims, "n_audio_ctx") : NULL;
    Py_XDECREF(dims);
    long ctx = ctx_obj ? PyLong_AsLong(ctx_obj) : -1;
    Py_XDECREF(ctx_obj);
    if (ctx < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(SwModelError, "this WhisperModel is closed");
        goto done;
    }
    npy_intp n_text = PyArray_DIM(a.text, 0);
    npy_intp adims[3] = {PyArray_DIM(a.heads, 0), PyArray_DIM(a.start, 0) + n_text + 2, ctx};
    npy_intp pdims[1] = {n_text};
    attention = PyArray_SimpleNew(3, adims, NPY_FLOAT32);
    probs = attention ? PyArray_SimpleNew(1, pdims, NPY_FLOAT32) : NULL;
    if (!probs)
        goto done;
    a.attention = PyArray_DATA((PyArrayObject *)attention);
    a.probs = PyArray_DATA((PyArrayObject *)probs);
    if (swpy_whisper_run(model, enc, do_word_attention, &a) == 0)
        result = PyTuple_Pack(2, attention, probs);
done:
    Py_XDECREF(attention);
    Py_XDECREF(probs);
    Py_XDECREF(a.start);
    Py_XDECREF(a.text);
    Py_XDECREF(a.heads);
    return result;
}

static PyMethodDef generate_functions[] = {
    {"whisper_word_attention", (PyCFunction)(void (*)(void))py_whisper_word_attention,
     METH_VARARGS | METH_KEYWORDS,
     "whisper_word_attention(model, encoder_output, start, text, heads [(layer, head)], *, eot, "
     "no_timestamps) -> (attention float32 [heads, positions, n_audio_ctx], text_probs "
     "float32 [len(text)]): the decoder over start + <|notimestamps|> + text + eot of one "
     "window (item=i: window i of a batch's encoder output, no copy), as word timestamps read "
     "it"},
    {"whisper_generate", (PyCFunction)(void (*)(void))py_whisper_generate,
     METH_VARARGS | METH_KEYWORDS,
     "whisper_generate(model, encoder_output, prompts [n, length], *, eot, sot, no_timestamps, "
     "no_speech, n_vocab=-1, beam_size=5, patience=1, length_penalty=1, repetition_penalty=1, "
     "no_repeat_ngram_size=0, max_length=448, sampling_topk=1, sampling_temperature=1, "
     "num_hypotheses=1, return_scores=False, return_no_speech_prob=False, "
     "max_initial_timestamp_index=50, suppress_blank=True, suppress_tokens=(-1,), "
     "suppress_ids=(), suppress_ids_begin=(), seed=0) -> [(hypotheses, scores, "
     "no_speech_prob, steps)] per window, hypotheses best first (CTranslate2's Whisper generate)"},
    {NULL, NULL, 0, NULL},
};

int swpy_init_whisper_generate(PyObject *module)
{
    return PyModule_AddFunctions(module, generate_functions);
}
