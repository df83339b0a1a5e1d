/* GE2E from the audio on a backend that makes the mels itself
 * (SW_CAP_MEL_POWER, backend.h's ABI 16: the GPU): the span's samples go
 * up once, the backend takes the mel power of every 10 ms frame of the
 * span, gathers each partial's frames (a speaker's kept frames of a chunk,
 * cut into partials of up to 160) times its sequence's volume gain, and
 * the network runs on them where they lie. On the host path (the CPU) the
 * mels are made by audio/mel.c and embedding_ge2e.py and go up as 40 floats
 * a frame of every partial: partials overlap by half and the diarizer's
 * chunks by nine tenths, so each frame of the span went up about twenty
 * times, where its 160 samples now go up once and an int32 id per partial
 * frame. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "audio_span.h"
#include "fused_ops.h"
#include "ge2e_internal.h"
#include "mel.h"
#include "ops.h"

/* The filters are the CPU's (sw_mel_filters), made and uploaded once. */
sw_status ge2e_load_mel_banks(sw_ge2e *m, sw_error *err)
{
    sw_backend *be = m->obj.be;
    if (!sw_supports(be, SW_CAP_MEL_POWER, 0, 0))
        return SW_OK;
    float *banks = NULL;
    if (sw_mel_filters(SW_WHISPER_SAMPLE_RATE, SW_WHISPER_N_FFT, SW_GE2E_MELS, &banks, err) !=
        SW_OK)
        return err->code;
    int64_t shape[2] = {SW_GE2E_MELS, SW_WHISPER_N_BINS};
    if (sw_tensor_new(be, SW_F32, 2, shape, &m->mel_banks, err) == SW_OK &&
        be->upload(be, m->mel_banks.data, banks, sw_tensor_nbytes(&m->mel_banks), err) == SW_OK)
        be->synchronize(be, err); /* the host's filters go once the copy is done */
    free(banks);
    return err->code;
}

int sw_ge2e_mels_on_device(const sw_ge2e *m)
{
    return m && m->mel_banks.data != NULL;
}

/* The partials well formed: each within `frames` (whose ids lie in the
 * span's n_mel frames), 1 to SW_GE2E_PARTIAL long, owners rising from 0 by
 * at most one, each owner's gain finite. */
static sw_status check_partials(const sw_ge2e_span *s, int64_t n_mel, sw_error *err)
{
    if (n_mel < 1)
        return sw_fail(err, SW_ERR_ARG, "GE2E: a span of %lld samples is shorter than a frame",
                       (long long)s->n_samples);
    for (int64_t i = 0; i < s->n_frames; i++)
        if (s->frames[i] < 0 || s->frames[i] >= n_mel)
            return sw_fail(err, SW_ERR_ARG, "GE2E: frame %d is outside the span's %lld frames",
                           (int)s->frames[i], (long long)n_mel);
    for (int i = 0; i < s->n; i++) {
        if (s->lengths[i] < 1 || s->lengths[i] > SW_GE2E_PARTIAL || s->starts[i] < 0 ||
            s->starts[i] > s->n_frames - s->lengths[i])
            return sw_fail(err, SW_ERR_ARG,
                           "GE2E: partial %d (frames %lld, %lld of them) is not 1 to %d of the "
                           "%lld frames",
                           i, (long long)s->starts[i], (long long)s->lengths[i], SW_GE2E_PARTIAL,
                           (long long)s->n_frames);
        int32_t before = i ? s->owners[i - 1] : 0;
        if (s->owners[i] < before || s->owners[i] > before + (i > 0) || s->owners[i] >= s->groups)
            return sw_fail(err, SW_ERR_ARG,
                           "GE2E: partial %d's owner %d does not follow %d (owners rise from 0 "
                           "by one, below %d)",
                           i, (int)s->owners[i], (int)before, s->groups);
    }
    if (s->n > 0 && s->owners[s->n - 1] != s->groups - 1)
        return sw_fail(err, SW_ERR_ARG, "GE2E: %d groups, but the partials own %d", s->groups,
                       (int)s->owners[s->n - 1] + 1);
    for (int g = 0; g < s->groups; g++)
        if (!(s->gains[g] > 0.0f) || !isfinite(s->gains[g]))
            return sw_fail(err, SW_ERR_ARG, "GE2E: group %d's gain %g is not positive and finite",
                           g, (double)s->gains[g]);
    return SW_OK;
}

/* Partials p0 .. p1 - 1 (whole groups): their frame ids padded to the
 * longest, each row's gain, last frame and group (one-hot) up in one copy;
 * the mels gathered and scaled from the span's table; the network. */
static sw_status run_pack(sw_ge2e *m, const sw_tensor *table, const sw_ge2e_span *s, int p0, int p1,
                          float *out, sw_error *err)
{
    sw_backend *be = m->obj.be;
    int n = p1 - p0, groups = s->owners[p1 - 1] - s->owners[p0] + 1;
    int64_t frames = 1;
    for (int i = p0; i < p1; i++)
        frames = s->lengths[i] > frames ? s->lengths[i] : frames;
    /* in 4-byte words, each part from a 256-byte boundary */
    int64_t at_gain = ((int64_t)n * frames + 63) / 64 * 64, at_last = at_gain + (n + 63) / 64 * 64;
    int64_t at_hot = at_last + (n + 63) / 64 * 64, total = at_hot + (int64_t)groups * n;
    void *host = calloc((size_t)total, sizeof(int32_t)); /* int32 ids, float gains */
    if (!host)
        return sw_fail(err, SW_ERR_NOMEM, "GE2E: out of host memory");
    int32_t *words = host;
    float *floats = host, *gain = floats + at_gain, *hot = floats + at_hot;
    for (int i = 0; i < n; i++) {
        const int32_t *ids = s->frames + s->starts[p0 + i];
        int32_t *row = words + (int64_t)i * frames;
        memcpy(row, ids, (size_t)s->lengths[p0 + i] * sizeof *row);
        for (int64_t t = s->lengths[p0 + i]; t < frames; t++)
            row[t] = -1; /* padding: zeros, read after the state that counts */
        int local = s->owners[p0 + i] - s->owners[p0];
        gain[i] = s->gains[s->owners[p0 + i]];
        words[at_last + i] = (int32_t)(i * frames + s->lengths[p0 + i] - 1);
        hot[(int64_t)local * n + i] = 1.0f;
    }
    sw_tensor up = {0}, x = {0};
    int64_t shape[3] = {n, frames, SW_GE2E_MELS};
    if (sw_tensor_new(be, SW_F32, 1, &total, &up, err) == SW_OK &&
        be->upload(be, up.data, host, sw_tensor_nbytes(&up), err) == SW_OK &&
        sw_tensor_new(be, SW_F32, 3, shape, &x, err) == SW_OK) {
        sw_tensor ids = sw_tensor_slice(&up, 0, 1, (int64_t)n * frames, 0, 0);
        sw_tensor gains = sw_tensor_slice(&up, at_gain, 1, n, 0, 0);
        sw_tensor last = sw_tensor_slice(&up, at_last, 1, n, 0, 0);
        sw_tensor one_hot = sw_tensor_slice(&up, at_hot, 2, groups, n, 0);
        ids.dtype = last.dtype = SW_I32;
        if (sw_gather_scaled(table, &ids, &gains, &x, err) == SW_OK)
            ge2e_forward(m, &x, &last, &one_hot, n, frames, out, err);
    }
    sw_tensor_free(&x);
    sw_tensor_free(&up);
    free(host);
    return err->code;
}

sw_status sw_ge2e_run_span(sw_ge2e *m, const sw_ge2e_span *s, float *out, sw_error *err)
{
    if (!m || !s || !s->samples || !s->frames || !s->starts || !s->lengths || !s->owners ||
        !s->gains || !out || s->n < 1 || s->groups < 1 || s->max_rows < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "GE2E: model, span, frames, partials, gains, out and max_rows >= 1 needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    sw_backend *be = m->obj.be;
    if (!sw_ge2e_mels_on_device(m))
        return sw_fail(err, SW_ERR_ARG,
                       "GE2E: the %s backend does not make mels: compute them on the host and "
                       "call sw_ge2e_run_pooled",
                       be->name);
    int64_t n_mel = s->n_samples / SW_WHISPER_HOP; /* audio/mel.c's frames, the last dropped */
    if (check_partials(s, n_mel, err) != SW_OK)
        return err->code;
    if (s->on_device && !sw_span_on(s->on_device, be, s->n_samples))
        return sw_fail(err, SW_ERR_ARG,
                       "GE2E: the span on the device is not %lld float32 samples on the model's "
                       "backend",
                       (long long)s->n_samples);
    for (int64_t i = 0; i < s->n_samples; i++)
        if (!isfinite(s->samples[i]))
            return sw_fail(err, SW_ERR_ARG, "GE2E: sample %lld of the span is not finite",
                           (long long)i);
    sw_tensor wave = {0}, table = {0};
    int64_t n_samples = s->n_samples, table_shape[2] = {n_mel, SW_GE2E_MELS};
    if ((s->on_device ||
         (sw_tensor_new(be, SW_F32, 1, &n_samples, &wave, err) == SW_OK &&
          be->upload(be, wave.data, s->samples, sw_tensor_nbytes(&wave), err) == SW_OK)) &&
        sw_tensor_new(be, SW_F32, 2, table_shape, &table, err) == SW_OK &&
        sw_mel_power_on_device(s->on_device ? s->on_device : &wave, SW_WHISPER_N_FFT,
                               SW_WHISPER_HOP, &m->mel_banks, &table, err) == SW_OK) {
        sw_tensor_free(&wave);
        /* whole groups a call, up to max_rows partials (a group longer than
         * that alone), as embedding_ge2e.py packs the host path's */
        for (int p0 = 0; p0 < s->n && err->code == SW_OK;) {
            int p1 = p0, end = p0;
            while (end < s->n) {
                int next = end;
                while (next < s->n && s->owners[next] == s->owners[end])
                    next++;
                if (next - p0 > s->max_rows && end > p0)
                    break;
                end = p1 = next;
            }
            run_pack(m, &table, s, p0, p1, out + (int64_t)s->owners[p0] * SW_GE2E_EMBED_DIM, err);
            p0 = p1;
        }
    }
    sw_tensor_free(&wave);
    sw_tensor_free(&table);
    return err->code;
}
