/* The GE2E model's parts that ge2e.c (weights, the forward from host mels)
 * and ge2e_span.c (the forward from the span's audio, its mels made on the
 * device) share. */
#ifndef SW_GE2E_INTERNAL_H
#define SW_GE2E_INTERNAL_H

#include "ge2e.h"
#include "model_object.h"

#define GE2E_LAYERS 3
#define GE2E_HIDDEN SW_GE2E_EMBED_DIM

struct sw_ge2e {
    sw_model_object obj;                                               /* first: model_object.h */
    sw_tensor w_ih[GE2E_LAYERS], w_hh[GE2E_LAYERS], bias[GE2E_LAYERS]; /* [1, 4H, in] ... */
    sw_tensor lin_w, lin_b;
    sw_tensor mel_banks; /* [40, 201] audio/mel.c's filters where the backend makes the
                          * mels (SW_CAP_MEL_POWER: ge2e_span.c); else empty */
};

/* mel_banks on the backend where it makes the mels (ge2e_span.c). */
sw_status ge2e_load_mel_banks(sw_ge2e *m, sw_error *err);

/* The network from mels on the device [n, frames, 40] (left alone): each
 * row's state at frame ids[i] (device int32 [n]) through the linear layer,
 * ReLU and L2 norm; with owners (device [groups, n] one-hot) each group's
 * sum, normalised. Down in one copy into out. */
sw_status ge2e_forward(sw_ge2e *m, const sw_tensor *mels, const sw_tensor *ids,
                       const sw_tensor *owners, int n, int64_t frames, float *out, sw_error *err);

#endif
