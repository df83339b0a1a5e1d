#include "whisper_align.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "whisper_internal.h"

/* Copies the alignment heads' rows of the last decode (n_tok positions) to
 * attention[:, pos .. pos + n_tok, :]. */
static sw_status take_heads(sw_whisper_state *st, const int *heads, int n_heads, int n_pos, int pos,
                            int n_tok, float *host, float *attention, sw_error *err)
{
    sw_whisper *m = st->model;
    int ctx = m->dims.n_audio_ctx;
    size_t row = (size_t)ctx;
    for (int h = 0; h < n_heads; h++) {
        const sw_tensor *t = sw_whisper_state_cross_attention(st, heads[2 * h]);
        if (!t)
            return sw_fail(err, SW_ERR_INTERNAL, "whisper align: no cross-attention kept");
        /* download a layer once for all its heads in a row */
        if (h == 0 || heads[2 * h] != heads[2 * (h - 1)])
            if (m->be->download(m->be, host, t->data, sw_tensor_nbytes(t), err))
                return err->code;
        for (int k = 0; k < n_tok; k++)
            memcpy(attention + ((size_t)h * n_pos + pos + k) * row,
                   host + ((size_t)heads[2 * h + 1] * n_tok + k) * row, row * sizeof(float));
    }
    return SW_OK;
}

/* softmax over ids < eot of logits, at id */
static float text_prob(const float *logits, int eot, int id)
{
    float mx = logits[0];
    for (int i = 1; i < eot; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0.0;
    for (int i = 0; i < eot; i++)
        sum += (double)expf(logits[i] - mx);
    return expf(logits[id] - mx) / (float)sum;
}

sw_status sw_whisper_align(sw_whisper *m, const sw_whisper_audio *audio, const int32_t *start,
                           int n_start, const int32_t *text, int n_text, int eot, int no_timestamps,
                           const int *heads, int n_heads, float *attention, float *text_probs,
                           sw_error *err)
{
    const sw_whisper_dims *d = sw_whisper_get_dims(m);
    int n_pos = n_start + n_text + 2;
    if (sw_whisper_audio_batch(audio) != 1)
        return sw_fail(err, SW_ERR_ARG, "whisper align: one window at a time (batch %d)",
                       sw_whisper_audio_batch(audio));
    if (n_start < 1 || n_text < 0 || n_pos > d->n_text_ctx || n_heads < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "whisper align: %d tokens do not fit the %d positions of the text context",
                       n_pos, d->n_text_ctx);
    for (int h = 0; h < n_heads; h++)
        if (heads[2 * h] < 0 || heads[2 * h] >= d->n_text_layer || heads[2 * h + 1] < 0 ||
            heads[2 * h + 1] >= d->n_text_head)
            return sw_fail(err, SW_ERR_ARG, "whisper align: no head (%d, %d) in this model",
                           heads[2 * h], heads[2 * h + 1]);
    sw_whisper_state *st = NULL;
    float *host = malloc((size_t)d->n_text_head * n_start * d->n_audio_ctx * sizeof *host);
    float *logits = malloc((size_t)d->n_vocab * sizeof *logits);
    if (!host || !logits) {
        sw_fail(err, SW_ERR_NOMEM, "whisper align: out of host memory");
        goto done;
    }
    if (sw_whisper_state_new(m, audio, 1, &st, err))
        goto done;
    sw_whisper_state_capture_cross_attention(st, 1);
    if (sw_whisper_decode(st, start, 1, n_start, logits, err) ||
        take_heads(st, heads, n_heads, n_pos, 0, n_start, host, attention, err))
        goto done;
    for (int p = n_start; p < n_pos; p++) {
        int k = p - n_start; /* 0: <|notimestamps|>, then the text, then eot */
        int32_t tok = k == 0 ? no_timestamps : k <= n_text ? text[k - 1] : eot;
        if (sw_whisper_decode(st, &tok, 1, 1, logits, err) ||
            take_heads(st, heads, n_heads, n_pos, p, 1, host, attention, err))
            goto done;
        if (k < n_text)
            text_probs[k] = text_prob(logits, eot, text[k]);
    }
done:
    sw_whisper_state_free(st);
    free(host);
    free(logits);
    return err->code;
}
