/* The emulated build finds this in place of the CUDA toolkit's cuda_fp16.h. */
#include "sw_emu.h"
