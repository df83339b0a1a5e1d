/* The struct behind sw_resnet34, shared by its weights and forward files, and
 * the architecture's fixed sizes (WeSpeaker's ResNet34). */
#ifndef SW_RESNET34_INTERNAL_H
#define SW_RESNET34_INTERNAL_H

#include "model_object.h"
#include "ops.h"
#include "resnet34.h"

#define RESNET_STAGES    4
#define RESNET_BLOCKS    16 /* 3 + 4 + 6 + 3 */
#define RESNET_POOL_ROWS 10 /* 80 rows halved three times */
#define RESNET_STATS     (2 * SW_RESNET34_EMBED_DIM * RESNET_POOL_ROWS)
#define RESNET_STD_EPS   1e-7 /* inside the square root, as WeSpeaker's pooling */

extern const int resnet_stage_blocks[RESNET_STAGES];
extern const int resnet_stage_channels[RESNET_STAGES];

/* A 3x3 convolution over (frequency, time) as the forward runs it: a 1-D
 * convolution over time whose input channels are the three neighbouring
 * frequency rows, w [C_out, 3 * C_in, 3] (row-major channels), b [C_out]. */
typedef struct resnet_conv {
    sw_tensor w, b;
    int c_in, c_out;
} resnet_conv;

typedef struct resnet_block {
    resnet_conv conv1, conv2;
    sw_tensor short_w, short_b; /* 1x1 shortcut [C_out, C_in], empty for identity */
    int stride;
} resnet_block;

struct sw_resnet34 {
    sw_model_object obj; /* first: model_object.h */
    resnet_conv conv1;
    resnet_block blocks[RESNET_BLOCKS];
    sw_tensor seg_w, seg_b; /* [256, 5120], [256] */
};

#endif
