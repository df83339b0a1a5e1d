#include "q8_pack_layout.h"

#include <string.h>

#define BLOCK 16 /* weight rows per packed block (q8_packed.h) */

int sw_q8_packable(int n, int k)
{
    return n > 0 && k > 0 && k % 4 == 0;
}

void sw_q8_pack_blocks(const int8_t *rows, int n, int k, int b0, int b1, int8_t *packed)
{
    int whole = n / BLOCK;
    for (int b = b0; b < b1 && b < whole; b++) {
        const int8_t *src = rows + (long)b * BLOCK * k;
        int8_t *dst = packed + (long)b * BLOCK * k;
        for (int g = 0; g < k / 4; g++)
            for (int c = 0; c < BLOCK; c++)
                memcpy(dst + (long)g * 64 + c * 4, src + (long)c * k + g * 4, 4);
    }
    if (b1 > whole) /* the rows after the last whole block keep their place */
        memcpy(packed + (long)whole * BLOCK * k, rows + (long)whole * BLOCK * k,
               (size_t)(n - whole * BLOCK) * (size_t)k);
}
