#include "amx_emu.h"

#include <stdio.h>
#include <stdlib.h>

static _Thread_local sw_emu_tiles state;

sw_emu_tiles *sw_emu_here(void)
{
    return &state;
}

void sw_emu_tile_fault(const char *instruction, const char *why)
{
    fprintf(stderr, "saywho: emulated %s would fault (#UD) on the CPU: %s\n", instruction, why);
    abort();
}
