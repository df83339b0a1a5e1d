/* Between the emulator's files; nothing here is seen by the backend. */
#ifndef SW_EMU_INTERNAL_H
#define SW_EMU_INTERNAL_H

#include "sw_emu.h"

/* What cudaGetLastError returns next, with the emulator's sentence for it. */
void sw_emu_set_error(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Notes a launch for SAYWHO_CUDA_EMU_COVERAGE (see emu_runtime.cpp). */
void sw_emu_count_launch(const char *kernel, dim3 grid, dim3 block, size_t shared);

/* Whether SAYWHO_CUDA_EMU_BREAK names this kernel (emu_sched.cpp). */
int sw_emu_broken(const char *kernel);

#endif
