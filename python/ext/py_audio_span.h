/* saywho._core.AudioSpan: a diarization batch's span of audio on the device,
 * uploaded once and read by segmentation and the speaker embedding
 * (csrc/diar/audio_span.h). */
#ifndef SWPY_AUDIO_SPAN_H
#define SWPY_AUDIO_SPAN_H

#include "py_model.h"

/* obj as an AudioSpan on model's Runtime: *out NULL for None; 0, or -1
 * with OptionError (another type, another Runtime) or ModelError (closed). */
int swpy_audio_span_arg(PyObject *obj, ModelObject *model, ModelObject **out);

/* With the Runtime's lock held: the span's samples on the device, or NULL
 * (span NULL, or closed under the caller). */
const sw_tensor *swpy_audio_span_samples(ModelObject *span);

int swpy_add_audio_span(PyObject *module);

#endif
