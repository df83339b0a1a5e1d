/* The CPU backend's ABI 6 entries (backend.h): its fused kernels and the
 * weight layouts they want, which model code reaches only through the table
 * (optional_ops.h). */
#ifndef SW_CPU_OPTIONAL_H
#define SW_CPU_OPTIONAL_H

#include "backend.h"

/* Sets b's supports, prepare_* and fused entries. */
void sw_cpu_optional_fill(sw_backend *b);

#endif
