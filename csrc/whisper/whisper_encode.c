/* A window's encode: replayed as the model's graph where the backend has
 * graphs (whisper_encoder_graph.c), else each op as it comes
 * (whisper_encoder.c). Apart from both, so the ops and the graph that
 * records them do not depend on each other both ways. */
#include "whisper_internal.h"

/* Each op as it comes: the activations made for this window and freed
 * after it, the outputs the audio's own. */
static sw_status encode_eager(sw_whisper *m, const float *mel, sw_whisper_audio *au, sw_error *err)
{
    sw_backend *be = m->obj.be;
    sw_wh_enc_buffers b;
    if (sw_wh_enc_buffers_new(m, au->batch, 0, &b, err) == SW_OK &&
        be->upload(be, b.mel->data, mel, sw_tensor_nbytes(b.mel), err) == SW_OK &&
        sw_wh_enc_outputs_new(au, err) == SW_OK && sw_wh_enc_run(m, &b, au, err) == SW_OK)
        be->synchronize(be, err);
    sw_wh_enc_buffers_free(m, &b);
    return err->code;
}

sw_status sw_whisper_encode(sw_whisper *m, const float *mel, int batch, sw_whisper_audio **out,
                            sw_error *err)
{
    *out = NULL;
    if (!m || !mel || batch < 1)
        return sw_fail(err, SW_ERR_ARG, "whisper encode: a model, a mel and batch >= 1 needed");
    sw_whisper_audio *au = sw_wh_audio_alloc(m, batch);
    if (!au)
        return sw_fail(err, SW_ERR_NOMEM, "whisper encode: out of host memory");
    int done = 0;
    if (sw_wh_enc_graph_encode(m, mel, batch, au, &done, err) == SW_OK && !done)
        encode_eager(m, mel, au, err);
    if (err->code != SW_OK) {
        sw_whisper_audio_free(au);
        return err->code;
    }
    *out = au;
    return SW_OK;
}
