/* CAM++ from the audio on a backend that makes the features itself
 * (SW_CAP_FBANK, backend.h's ABI 12: the GPU): the span's samples go up
 * once, the backend takes Kaldi's fbank of every frame of the span and
 * gathers each (chunk, speaker) sequence's kept frames less their own mean,
 * and the network runs on them where they lie. On the host path (the CPU)
 * the features are made by audio/fbank.c and embedding_campp.py and go up
 * as 80 floats a frame: 12.5 times the 160 samples of audio they come
 * from, and ten times over where the diarizer's chunks overlap. */
#include <math.h>
#include <stdlib.h>

#include "audio_span.h"
#include "campp_internal.h"

sw_fbank_options campp_fbank_options(void)
{
    sw_fbank_options o = sw_fbank_default_options();
    o.num_mel_bins = SW_CAMPP_FEAT_DIM;
    o.povey_window = 1;
    o.input_scale = 1.0f;
    o.subtract_mean = 0;
    return o;
}

/* The filters are the CPU's (sw_kaldi_mel_banks), made and uploaded once. */
sw_status campp_load_mel_banks(sw_campp *m, sw_error *err)
{
    sw_backend *be = m->obj.be;
    if (!sw_supports(be, SW_CAP_FBANK, 0, 0))
        return SW_OK;
    sw_fbank_options o = campp_fbank_options();
    float *banks = NULL;
    int bins = 0;
    if (sw_kaldi_mel_banks(&o, &banks, &bins, err) != SW_OK)
        return err->code;
    int64_t shape[2] = {o.num_mel_bins, bins};
    if (sw_tensor_new(be, SW_F32, 2, shape, &m->mel_banks, err) == SW_OK &&
        be->upload(be, m->mel_banks.data, banks, sw_tensor_nbytes(&m->mel_banks), err) == SW_OK)
        be->synchronize(be, err); /* the host's filters go once the copy is done */
    free(banks);
    return err->code;
}

int sw_campp_features_on_device(const sw_campp *m)
{
    return m && m->mel_banks.data != NULL;
}

static sw_fbank_params device_params(const sw_fbank_options *o)
{
    sw_fbank_params p;
    p.window = (int32_t)(o->sample_rate * 0.001 * o->frame_length_ms);
    p.shift = (int32_t)(o->sample_rate * 0.001 * o->frame_shift_ms);
    p.n_fft = 1;
    while (p.n_fft < p.window)
        p.n_fft <<= 1;
    p.remove_dc = o->remove_dc_offset;
    p.povey_window = o->povey_window;
    p.input_scale = o->input_scale;
    p.preemphasis = o->preemphasis;
    return p;
}

/* The span's samples finite, the items long enough and their frames in
 * the span; *total their frames. */
static sw_status check_span(const float *samples, int64_t n_samples, int64_t n_frames,
                            const int32_t *frames, const int64_t *lengths, int batch,
                            int64_t *total, sw_error *err)
{
    if (n_frames < 1)
        return sw_fail(err, SW_ERR_ARG, "CAM++: a span of %lld samples is shorter than a frame",
                       (long long)n_samples);
    for (int64_t i = 0; i < n_samples; i++)
        if (!isfinite(samples[i]))
            return sw_fail(err, SW_ERR_ARG, "CAM++: sample %lld of the span is not finite",
                           (long long)i);
    *total = 0;
    for (int b = 0; b < batch; b++) {
        if (lengths[b] < SW_CAMPP_MIN_FRAMES || lengths[b] > INT32_MAX - *total)
            return sw_fail(err, SW_ERR_ARG, "CAM++: item %d has %lld frames (at least %d)", b,
                           (long long)lengths[b], SW_CAMPP_MIN_FRAMES);
        *total += lengths[b];
    }
    for (int64_t r = 0; r < *total; r++)
        if (frames[r] < 0 || frames[r] >= n_frames)
            return sw_fail(err, SW_ERR_ARG, "CAM++: frame %d is outside the span's %lld frames",
                           (int)frames[r], (long long)n_frames);
    return SW_OK;
}

/* Items first .. first + count - 1, whose rows start at row `at` of ids:
 * their features gathered and centred, then the network. */
static sw_status run_pack(sw_campp *m, const sw_tensor *feats, const sw_tensor *ids, int64_t at,
                          const int64_t *lengths, int count, float *out, sw_error *err)
{
    int64_t *off = malloc((size_t)(count + 1) * sizeof *off);
    if (!off)
        return sw_fail(err, SW_ERR_NOMEM, "CAM++: out of host memory");
    off[0] = 0;
    for (int b = 0; b < count; b++)
        off[b + 1] = off[b] + lengths[b];
    sw_tensor rows = sw_tensor_slice(ids, at, 1, off[count], 0, 0), x = {0};
    int64_t shape[2] = {off[count], SW_CAMPP_FEAT_DIM};
    if (sw_tensor_new(m->obj.be, SW_F32, 2, shape, &x, err) == SW_OK &&
        sw_gather_centered(feats, &rows, count, off, &x, err) == SW_OK)
        campp_run_device(m, &x, lengths, count, out, err); /* frees x */
    sw_tensor_free(&x);
    free(off);
    return err->code;
}

sw_status sw_campp_run_span(sw_campp *m, const float *samples, int64_t n_samples,
                            const sw_tensor *on_device, const int32_t *frames,
                            const int64_t *lengths, int batch, int64_t max_frames, float *out,
                            sw_error *err)
{
    if (!m || !samples || !frames || !lengths || !out || batch < 1 || max_frames < 1)
        return sw_fail(err, SW_ERR_ARG,
                       "CAM++: model, samples, frames, lengths, out and max_frames >= 1 needed");
    if (sw_model_object_usable(&m->obj, err) != SW_OK)
        return err->code;
    sw_backend *be = m->obj.be;
    if (!sw_campp_features_on_device(m))
        return sw_fail(err, SW_ERR_ARG,
                       "CAM++: the %s backend does not make features: compute the fbank on the "
                       "host and call sw_campp_run_items",
                       be->name);
    sw_fbank_options o = campp_fbank_options();
    int64_t n_frames = (int64_t)sw_fbank_frames(&o, (size_t)(n_samples > 0 ? n_samples : 0)), total;
    if (check_span(samples, n_samples, n_frames, frames, lengths, batch, &total, err) != SW_OK)
        return err->code;
    if (on_device && !sw_span_on(on_device, be, n_samples))
        return sw_fail(err, SW_ERR_ARG,
                       "CAM++: the span on the device is not %lld float32 samples on the "
                       "model's backend",
                       (long long)n_samples);
    sw_fbank_params p = device_params(&o);
    sw_tensor wave = {0}, feats = {0}, ids = {0};
    int64_t feat_shape[2] = {n_frames, SW_CAMPP_FEAT_DIM};
    /* two copies up: the samples (unless they are there), then the frames' ids */
    if ((on_device ||
         (sw_tensor_new(be, SW_F32, 1, &n_samples, &wave, err) == SW_OK &&
          be->upload(be, wave.data, samples, sw_tensor_nbytes(&wave), err) == SW_OK)) &&
        sw_tensor_new(be, SW_F32, 2, feat_shape, &feats, err) == SW_OK &&
        sw_fbank_on_device(on_device ? on_device : &wave, &p, &m->mel_banks, &feats, err) ==
            SW_OK &&
        sw_tensor_new(be, SW_I32, 1, &total, &ids, err) == SW_OK &&
        be->upload(be, ids.data, frames, sw_tensor_nbytes(&ids), err) == SW_OK) {
        sw_tensor_free(&wave);
        /* runs of items of at most max_frames frames (one item at least)
         * a forward, as embedding_campp.py packs the host path's */
        int64_t at = 0;
        for (int start = 0; start < batch && err->code == SW_OK;) {
            int stop = start;
            int64_t pack = 0;
            while (stop < batch && (stop == start || pack + lengths[stop] <= max_frames))
                pack += lengths[stop++];
            run_pack(m, &feats, &ids, at, lengths + start, stop - start,
                     out + (int64_t)start * SW_CAMPP_EMBED_DIM, err);
            at += pack;
            start = stop;
        }
    }
    sw_tensor_free(&wave);
    sw_tensor_free(&feats);
    sw_tensor_free(&ids);
    return err->code;
}
