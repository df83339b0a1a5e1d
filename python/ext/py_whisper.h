/* What py_whisper.c lends the other Whisper binding (py_whisper_generate.c). */
#ifndef SWPY_WHISPER_H
#define SWPY_WHISPER_H

#include "py_common.h"

#include "whisper_model.h"

/* 1 if obj is a saywho._core.WhisperModel (open or closed). */
int swpy_is_whisper_model(PyObject *obj);

typedef void (*swpy_whisper_fn)(sw_whisper *model, const sw_whisper_audio *audio, void *ctx,
                                sw_error *err);

/* Runs fn on the open model and its open EncoderOutput enc, under the
 * Runtime's lock and without the GIL; -1 with an exception set. */
int swpy_whisper_run(PyObject *model, PyObject *enc, swpy_whisper_fn fn, void *ctx);

#endif
