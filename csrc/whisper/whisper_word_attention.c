#include "whisper_word_attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "whisper_internal.h"

/* Copies the alignment heads' rows of the last decode (n_tok positions) to
 * att [n_heads, n_pos, ctx], rows pos .. pos + n_tok - 1, on the device (a
 * scale by one is the backend table's copy): the rows of every step come to
 * the host in one download at the end. */
static sw_status take_heads(sw_whisper_state *st, const int *heads, int n_heads, int n_pos, int pos,
                            int n_tok, sw_tensor *att, sw_error *err)
{
    int64_t ctx = st->model->dims.n_audio_ctx, block = (int64_t)n_tok * ctx;
    for (int h = 0; h < n_heads; h++) {
        const sw_tensor *t = sw_whisper_state_cross_attention(st, heads[2 * h]);
        if (!t)
            return sw_fail(err, SW_ERR_INTERNAL, "whisper word attention: no cross-attention kept");
        sw_tensor src = sw_tensor_slice(t, heads[2 * h + 1] * block, 1, block, 0, 0);
        sw_tensor dst = sw_tensor_slice(att, ((int64_t)h * n_pos + pos) * ctx, 1, block, 0, 0);
        if (sw_scale(&src, 1.0f, &dst, err))
            return err->code;
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

sw_status sw_whisper_word_attention(sw_whisper *m, const sw_whisper_audio *audio,
                                    const int32_t *start, int n_start, const int32_t *text,
                                    int n_text, int eot, int no_timestamps, const int *heads,
                                    int n_heads, float *attention, float *text_probs, sw_error *err)
{
    const sw_whisper_dims *d = sw_whisper_get_dims(m);
    int n_pos = n_start + n_text + 2;
    if (sw_whisper_audio_batch(audio) != 1)
        return sw_fail(err, SW_ERR_ARG, "whisper word attention: one window at a time (batch %d)",
                       sw_whisper_audio_batch(audio));
    if (n_start < 1 || n_text < 0 || n_pos > d->n_text_ctx || n_heads < 1)
        return sw_fail(
            err, SW_ERR_ARG,
            "whisper word attention: %d tokens do not fit the %d positions of the text context",
            n_pos, d->n_text_ctx);
    for (int h = 0; h < n_heads; h++)
        if (heads[2 * h] < 0 || heads[2 * h] >= d->n_text_layer || heads[2 * h + 1] < 0 ||
            heads[2 * h + 1] >= d->n_text_head)
            return sw_fail(err, SW_ERR_ARG,
                           "whisper word attention: no head (%d, %d) in this model", heads[2 * h],
                           heads[2 * h + 1]);
    sw_whisper_state *st = NULL;
    sw_tensor att = {0};
    int64_t att_shape[3] = {n_heads, n_pos, d->n_audio_ctx};
    float *logits = malloc((size_t)d->n_vocab * sizeof *logits);
    if (!logits) {
        sw_fail(err, SW_ERR_NOMEM, "whisper word attention: out of host memory");
        goto done;
    }
    if (sw_tensor_new(m->obj.be, SW_F32, 3, att_shape, &att, err) ||
        sw_whisper_state_new(m, audio, 1, &st, err))
        goto done;
    sw_whisper_state_capture_cross_attention(st, 1);
    if (sw_whisper_decode(st, start, 1, n_start, logits, err) ||
        take_heads(st, heads, n_heads, n_pos, 0, n_start, &att, err))
        goto done;
    for (int p = n_start; p < n_pos; p++) {
        int k = p - n_start; /* 0: <|notimestamps|>, then the text, then eot */
        int32_t tok = k == 0 ? no_timestamps : k <= n_text ? text[k - 1] : eot;
        if (sw_whisper_decode(st, &tok, 1, 1, logits, err) ||
            take_heads(st, heads, n_heads, n_pos, p, 1, &att, err))
            goto done;
        if (k < n_text)
            text_probs[k] = text_prob(logits, eot, text[k]);
    }
    m->obj.be->download(m->obj.be, attention, att.data, sw_tensor_nbytes(&att), err);
done:
    sw_whisper_state_free(st);
    sw_tensor_free(&att);
    free(logits);
    return err->code;
}
