#include "cpu_conv_single.h"

#include <stdint.h>

#include "cpu_workers.h"
#include "cpu_dispatch.h"
#include "vec_types.h"

typedef struct single_job {
    const float *x, *w, *bias;
    float *y;
    const int64_t *off;
    int64_t h, c;
    int batch, relu;
} single_job;

/* Row f of image b: every column's nine inputs, then the channels. The sum
 * runs over the taps from zero, the bias added after, as the product and
 * sw_add did. */
SW_ALWAYS_INLINE void row_body(const single_job *j, int b, int64_t f)
{
    int64_t wd = j->off[b + 1] - j->off[b];
    const float *img = j->x + j->h * j->off[b];
    float *out = j->y + (j->h * j->off[b] + f * wd) * j->c;
    for (int64_t t = 0; t < wd; t++, out += j->c) {
        float in[9];
        for (int dr = 0; dr < 3; dr++)
            for (int dc = 0; dc < 3; dc++) {
                int64_t r = f + dr - 1, col = t + dc - 1;
                in[dr * 3 + dc] =
                    r < 0 || r >= j->h || col < 0 || col >= wd ? 0.0f : img[r * wd + col];
            }
        for (int64_t c0 = 0; c0 < j->c; c0 += 8) {
            sw_v8 acc = (sw_v8){0};
            for (int k = 0; k < 9; k++)
                acc = acc + in[k] * LOAD_V8(j->w + k * j->c + c0);
            if (j->bias)
                acc = acc + LOAD_V8(j->bias + c0);
            if (j->relu) /* sw_leaky_relu_bits(acc, 0), as the product's finish did */
                acc = RELU_V8(acc);
            STORE_V8(out + c0, acc);
        }
    }
}

SW_ALWAYS_INLINE void rows_at_level_body(const single_job *j, size_t begin, size_t end)
{
    for (size_t i = begin; i < end; i++)
        row_body(j, (int)((int64_t)i / j->h), (int64_t)i % j->h);
}
SW_VOID_MULTIVERSION(static, rows_at_level, (const single_job *j, size_t begin, size_t end),
                     (j, begin, end))

static void rows(void *ctx, size_t begin, size_t end)
{
    rows_at_level(ctx, begin, end);
}

sw_status sw_cpu_conv3x3_single(const sw_tensor *x, int64_t h, int batch, const int64_t *off,
                                const float *w, const float *bias, int relu, sw_tensor *y,
                                sw_error *err)
{
    sw_backend *be = x->backend;
    int64_t c = sw_row_len(y);
    if (be->kind != SW_DEVICE_CPU || batch < 1 || h < 1 || c < 8 || c % 8 || sw_row_len(x) != 1 ||
        sw_rows(x) != h * off[batch] || sw_rows(y) != sw_rows(x))
        return sw_fail(err, SW_ERR_ARG, "sw_cpu_conv3x3_single: shapes do not agree");
    single_job j = {x->data, w, bias, y->data, off, h, c, batch, relu};
    sw_cpu_backend_parallel_for(be, (size_t)(h * batch), 1, rows, &j);
    return SW_OK;
}
