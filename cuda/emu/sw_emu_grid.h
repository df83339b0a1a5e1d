/* What the kernels' dialect (sw_emu.h) and the scheduler that runs its
 * launches (emu_sched.cpp) share: the grid's shape types, the running
 * thread's coordinates, the scheduling points a kernel calls and the launch
 * of a grid on a stream. The scheduler includes this and not sw_emu.h, so
 * the dialect is built on the scheduler and never the other way round. */
#ifndef SW_EMU_GRID_H
#define SW_EMU_GRID_H

#ifndef __cplusplus
#error "sw_emu_grid.h is C++: compile the .cu files with -x c++"
#endif

#include <stddef.h>
#include <stdint.h>

#define SW_EMU_API extern "C" __attribute__((visibility("hidden")))

/* ---- grids, blocks and the running thread's coordinates ---- */
struct uint3 {
    unsigned x, y, z;
};

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz)
    {
    }
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z)
    {
    }
};

/* Set by the scheduler before it resumes a thread. One launch runs at a time in
 * the process (emu_sched.cpp holds a lock), so plain globals suffice. */
extern "C" __attribute__((visibility("hidden"))) uint3 threadIdx, blockIdx;
extern "C" __attribute__((visibility("hidden"))) dim3 blockDim, gridDim;

/* ---- scheduling points: implemented in emu_sched.cpp ---- */
SW_EMU_API void sw_emu_syncthreads(const char *file, int line);
/* All lanes of `mask` (which must hold the caller) meet here; each gives
 * `value` and gets back the array of the 32 values of its warp. */
SW_EMU_API const uint64_t *sw_emu_warp_exchange(unsigned mask, uint64_t value, const char *what,
                                                const char *file, int line);
SW_EMU_API unsigned sw_emu_lane(void);
SW_EMU_API unsigned sw_emu_active_lanes(void);
/* Stops the launch: the thread never resumes and the launch reports `why`. */
SW_EMU_API void sw_emu_fault(const char *file, int line, const char *why);
SW_EMU_API void *sw_emu_static_shared(const void *key, size_t bytes, const char *file, int line);
SW_EMU_API void *sw_emu_dynamic_shared(void);

/* ---- launches ---- */
struct CUstream_st;
typedef struct CUstream_st *cudaStream_t;

/* Runs body(ctx) once per thread of the grid; a bad configuration or a fault
 * inside the kernel is what the next cudaGetLastError returns. On a stream
 * that is capturing (emu_graph.cpp) the launch is recorded instead: clone(ctx)
 * keeps the kernel and its arguments as they are now, and drop frees them
 * when the last graph holding them goes. */
SW_EMU_API void sw_emu_launch_grid(const char *kernel, dim3 grid, dim3 block, size_t shared,
                                   cudaStream_t stream, void (*body)(void *), void *ctx,
                                   void *(*clone)(const void *), void (*drop)(void *));

#endif
