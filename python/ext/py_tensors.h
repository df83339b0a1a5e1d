/* A Python dict of NumPy arrays as the core's named tensors, for every model
 * type of the extension (Whisper, segmentation, CAM++, ResNet34, GE2E, Silero
 * VAD): the arrays and their names stay alive while the core reads them. */
#ifndef SWPY_TENSORS_H
#define SWPY_TENSORS_H

#include "py_common.h"

#include "named_tensors.h"

typedef struct swpy_tensors {
    sw_named_tensor *t;
    PyObject **refs; /* 2 per tensor: UTF-8 name and array */
    Py_ssize_t n;
} swpy_tensors;

/* dict[str, array] -> *h: float16 arrays stay float16 (the core widens them
 * on the device), any other array becomes C-contiguous float32. Returns -1
 * with a ModelError naming the tensor; swpy_tensors_free is needed in both
 * cases. */
int swpy_tensors_hold(PyObject *tensors, swpy_tensors *h);

void swpy_tensors_free(swpy_tensors *h);

#endif
