#include "whisper_compute.h"

#include <stdio.h>
#include <string.h>

#include "fused_ops.h"

/* The computes, in sw_whisper_compute's order, with what each needs. The
 * CPU's bfloat16 keeps its convolutions and token embedding float32 and runs
 * the linear layers in bfloat16 (whisper_weights.c): it needs bfloat16
 * linear products only; float16 needs half weights in every op. */
static const struct {
    const char *name;
    unsigned needs;
} computes[] = {
    [SW_WHISPER_FLOAT32] = {"float32", 0},
    [SW_WHISPER_INT8] = {"int8", SW_WHISPER_OFFERS_INT8},
    [SW_WHISPER_FLOAT16] = {"float16", SW_WHISPER_OFFERS_HALF},
    [SW_WHISPER_BFLOAT16] = {"bfloat16", SW_WHISPER_OFFERS_BF16_LINEAR},
    [SW_WHISPER_INT8_FLOAT16] = {"int8_float16", SW_WHISPER_OFFERS_INT8 | SW_WHISPER_OFFERS_HALF},
};
#define N_COMPUTES ((int)(sizeof computes / sizeof computes[0]))

/* What a user may write: faster-whisper's names. "default" keeps float32
 * (the readers widen float16 checkpoints, as CTranslate2 does on a CPU);
 * "auto" is the CPU's fastest, int8; "int8_float32" is CTranslate2's long
 * name of int8. -1: a name faster-whisper takes that saywho does not build. */
static const struct {
    const char *name;
    int compute;
} spellings[] = {
    {"default", SW_WHISPER_FLOAT32},
    {"auto", SW_WHISPER_INT8},
    {"float32", SW_WHISPER_FLOAT32},
    {"int8", SW_WHISPER_INT8},
    {"int8_float32", SW_WHISPER_INT8},
    {"float16", SW_WHISPER_FLOAT16},
    {"bfloat16", SW_WHISPER_BFLOAT16},
    {"int8_float16", SW_WHISPER_INT8_FLOAT16},
    {"int8_bfloat16", -1},
    {"int16", -1},
};
#define N_SPELLINGS ((int)(sizeof spellings / sizeof spellings[0]))

int sw_whisper_compute_count(void)
{
    return N_COMPUTES;
}

const char *sw_whisper_compute_name(int compute)
{
    return compute >= 0 && compute < N_COMPUTES ? computes[compute].name : NULL;
}

const char *sw_whisper_compute_spelling(int i, int *compute)
{
    if (i < 0 || i >= N_SPELLINGS)
        return NULL;
    if (compute)
        *compute = spellings[i].compute;
    return spellings[i].name;
}

/* "'a', 'b' or 'c'" (`last_sep` before the last): the names of the computes
 * whose needs `offered` meets (all of them with offered ~0u), or with
 * `spelled` every name a user may write that is built. */
static void list_computes(char *out, size_t size, unsigned offered, int spelled,
                          const char *last_sep)
{
    int n = spelled ? N_SPELLINGS : N_COMPUTES, last = -1, count = 0;
    for (int i = 0; i < n; i++)
        if (spelled ? spellings[i].compute >= 0 : (computes[i].needs & ~offered) == 0)
            last = i;
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i <= last && used < size; i++) {
        if (spelled ? spellings[i].compute < 0 : (computes[i].needs & ~offered) != 0)
            continue;
        const char *sep = count == 0 ? "" : i == last ? last_sep : ", ";
        int w = snprintf(out + used, size - used, "%s'%s'", sep,
                         spelled ? spellings[i].name : computes[i].name);
        used += w > 0 ? (size_t)w : 0;
        count++;
    }
}

sw_status sw_whisper_compute_parse(const char *name, sw_whisper_compute *out, sw_error *err)
{
    char names[256];
    for (int i = 0; name && i < N_SPELLINGS; i++) {
        if (strcmp(name, spellings[i].name) != 0)
            continue;
        if (spellings[i].compute < 0) {
            list_computes(names, sizeof names, ~0u, 0, " or ");
            return sw_fail(err, SW_ERR_ARG,
                           "compute_type '%s' is not built in saywho yet; use %s (or 'default', "
                           "'auto')",
                           name, names);
        }
        *out = (sw_whisper_compute)spellings[i].compute;
        return SW_OK;
    }
    list_computes(names, sizeof names, ~0u, 1, " or ");
    return sw_fail(err, SW_ERR_ARG, "unknown compute_type '%s'; expected %s",
                   name ? name : "(null)", names);
}

unsigned sw_whisper_compute_offered(sw_backend *be)
{
    unsigned offered = 0;
    if (be->matmul_q8)
        offered |= SW_WHISPER_OFFERS_INT8;
    if (sw_supports(be, SW_CAP_HALF_WEIGHTS, 0, 0))
        offered |= SW_WHISPER_OFFERS_HALF | SW_WHISPER_OFFERS_BF16_LINEAR;
    if (sw_supports(be, SW_CAP_HALF_TRANSPOSED_B, SW_BF16, 0))
        offered |= SW_WHISPER_OFFERS_BF16_LINEAR;
    return offered;
}

/* What a missing bit means to the user. Half weights in every op are the
 * CUDA backend's, hence "a GPU" and the way out device='cuda'. */
static const char *need_text(unsigned missing)
{
    if (missing & SW_WHISPER_OFFERS_HALF)
        return "a GPU";
    if (missing & SW_WHISPER_OFFERS_INT8)
        return "int8 products";
    return "bfloat16 products";
}

sw_status sw_whisper_compute_check(int compute, unsigned offered, const char *backend_name,
                                   sw_error *err)
{
    if (compute < 0 || compute >= N_COMPUTES)
        return sw_fail(err, SW_ERR_ARG, "unknown compute type %d", compute);
    unsigned missing = computes[compute].needs & ~offered;
    if (!missing)
        return SW_OK;
    char has[256];
    list_computes(has, sizeof has, offered, 0, " and ");
    return sw_fail(err, SW_ERR_ARG,
                   "compute_type '%s' needs %s: the %s backend computes %s; use one of those%s",
                   computes[compute].name, need_text(missing), backend_name, has,
                   missing & SW_WHISPER_OFFERS_HALF ? ", or device='cuda'" : "");
}
