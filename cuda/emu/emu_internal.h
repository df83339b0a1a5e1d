/* Between the emulator's files; nothing here is seen by the backend. */
#ifndef SW_EMU_INTERNAL_H
#define SW_EMU_INTERNAL_H

/* The grid and the runtime's types, not the kernels' dialect (sw_emu.h):
 * the dialect calls into these files, so they do not include it. */
#include "sw_emu_grid.h"
#include "sw_emu_runtime.h"

/* Notes a launch for SAYWHO_CUDA_EMU_COVERAGE (see emu_runtime.cpp). */
void sw_emu_count_launch(const char *kernel, dim3 grid, dim3 block, size_t shared);

/* Whether SAYWHO_CUDA_EMU_BREAK names this kernel (emu_sched.cpp). */
int sw_emu_broken(const char *kernel);

/* ---- stream capture (emu_graph.cpp) ---- */
#include <functional>

/* Whether work queued on `stream` is being recorded now (an invalidated
 * capture counts: its work is dropped, as a GPU drops it). */
int sw_emu_capturing(cudaStream_t stream);

/* Appends `work` to the capture of `stream` (the caller checked
 * sw_emu_capturing); it runs, in order, at each cudaGraphLaunch. */
void sw_emu_record(cudaStream_t stream, std::function<void()> work);

/* A call a capture forbids, as a GPU does: on a capturing stream (a
 * synchronisation, a copy to or from pageable host memory), or, with stream
 * NULL, a call that would wait for the device or change its memory map while
 * any capture in global mode is open (cudaMalloc, cudaFree, cudaMemcpy,
 * cudaDeviceSynchronize). The capture is invalidated and the error returned
 * (and set for cudaGetLastError); cudaSuccess where nothing forbids it. */
cudaError_t sw_emu_capture_refuse(cudaStream_t stream, const char *call);

#endif
