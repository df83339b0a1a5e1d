/* The emulated build finds this in place of the CUDA toolkit's cuda_runtime.h. */
#include "sw_emu.h"
