/* Putting int8 weight rows into the packed layout that q8_packed.h
 * describes, apart from the kernels that read it, so that the AMX unit (which
 * packs its self-check's weights) and the packed product (which hands wide
 * products to AMX) do not include each other. */
#ifndef SW_Q8_PACK_LAYOUT_H
#define SW_Q8_PACK_LAYOUT_H

#include <stdint.h>

/* 1 when [n, k] int8 weights can take the packed layout. */
int sw_q8_packable(int n, int k);

/* Rows [16 * b0, 16 * b1) of the row-major `rows` [n, k] into their packed
 * place in `packed` (whole blocks; rows past n rounded down to 16 are
 * copied as they are when the range reaches them). Not in place. */
void sw_q8_pack_blocks(const int8_t *rows, int n, int k, int b0, int b1, int8_t *packed);

#endif
