/* The emulator's last error: what the next cudaGetLastError returns and the
 * sentence cudaGetErrorString gives for it (emu_errors.cpp). Every part of
 * the emulator reports through it (a launch, a copy, a capture) and it calls
 * none of them back. */
#ifndef SW_EMU_ERRORS_H
#define SW_EMU_ERRORS_H

#include "sw_emu_runtime.h"

/* What cudaGetLastError returns next, with the emulator's sentence for it. */
void sw_emu_set_error(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
