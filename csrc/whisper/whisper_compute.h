/* Whisper's compute types: the one list of their names, what each needs of
 * a backend, and the one message when a backend lacks it.
 *
 * The names are faster-whisper's (CTranslate2's): the five the core computes
 * (sw_whisper_compute, whisper_model.h), the spellings that mean one of them
 * ("default", "auto", "int8_float32"), and the names saywho does not build.
 * The extension reports this list to Python (saywho._core.compute_types);
 * python/saywho/whisper/compute_types.py holds no list of its own
 * (tests/test_c_structure.py fails on a name list anywhere else).
 *
 * The rule is on a set of capabilities (sw_whisper_offer bits), so it is
 * checked where a backend is open: sw_whisper_create asks it, and Python asks
 * it on an open Runtime before any weight is read. */
#ifndef SW_WHISPER_COMPUTE_H
#define SW_WHISPER_COMPUTE_H

#include "backend.h"
#include "whisper_model.h"

/* What a backend offers the compute types, as bits. */
enum {
    SW_WHISPER_OFFERS_INT8 = 1,       /* int8 products (the matmul_q8 slot) */
    SW_WHISPER_OFFERS_HALF = 2,       /* half-precision weights in every op (SW_CAP_HALF_WEIGHTS) */
    SW_WHISPER_OFFERS_BF16_LINEAR = 4 /* bfloat16 linear products, at least
                                         (SW_CAP_HALF_WEIGHTS or SW_CAP_HALF_TRANSPOSED_B) */
};

/* The number of compute types the core computes, and each one's name
 * ("float32", "int8", ...), in sw_whisper_compute's order; NULL out of range. */
int sw_whisper_compute_count(void);
const char *sw_whisper_compute_name(int compute);

/* The names a user may write, in the order they are listed (i from 0 until
 * NULL): each with the compute it means, or -1 for a faster-whisper name
 * saywho does not build. */
const char *sw_whisper_compute_spelling(int i, int *compute);

/* A written name to the compute it means; SW_ERR_ARG naming it when it is
 * unknown or not built. */
sw_status sw_whisper_compute_parse(const char *name, sw_whisper_compute *out, sw_error *err);

/* What an open backend offers (SW_WHISPER_OFFERS_* bits). */
unsigned sw_whisper_compute_offered(sw_backend *be);

/* SW_OK when a backend offering `offered` (named `backend_name` in the
 * message) computes `compute`; otherwise SW_ERR_ARG with the one message:
 * what the compute needs, and the computes that backend has. */
sw_status sw_whisper_compute_check(int compute, unsigned offered, const char *backend_name,
                                   sw_error *err);

#endif
