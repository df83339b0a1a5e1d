/* The table's ABI 12 entries (backend.h): Kaldi fbank frames made by the
 * backend, and rows gathered less their item's mean. On the CPU both are
 * declined (SW_CAP_FBANK 0, the entries NULL, a call refused); on the CUDA
 * backend's kernels (test_device_features_emulated) the fbank of real
 * speech is audio/fbank.c's to float32 rounding, with both windows and
 * both input scales, and the centred rows are the host's double-precision
 * arithmetic to the bit. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device_tensors.h"
#include "decode.h"
#include "fbank.h"
#include "fused_ops.h"

static void declined(sw_backend *b)
{
    CHECK(!sw_supports(b, SW_CAP_FBANK, 0, 0) && !b->fbank && !b->gather_centered);
    sw_error err = {SW_OK, ""};
    int64_t n = 400, shape[2] = {1, 80};
    float zeros[400] = {0};
    sw_tensor x = upload(b, SW_F32, 1, &n, zeros), y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 2, shape, &y, &err) == SW_OK);
    sw_fbank_params p = {400, 160, 512, 1, 1, 1.0f, 0.97f};
    CHECK(sw_fbank_on_device(&x, &p, &x, &y, &err) == SW_ERR_ARG);
    sw_tensor_free(&x);
    sw_tensor_free(&y);
}

/* The device's frames of `audio` against sw_fbank's with the same options. */
static void fbank_pair(sw_backend *b, const float *audio, size_t n, int povey, float scale)
{
    sw_error err = {SW_OK, ""};
    sw_fbank_options o = sw_fbank_default_options();
    o.povey_window = povey;
    o.input_scale = scale;
    o.subtract_mean = 0;
    float *want = NULL, *banks = NULL;
    size_t frames = 0;
    int bins = 0;
    CHECK(sw_fbank(audio, n, &o, NULL, &want, &frames, &err) == SW_OK);
    CHECK(sw_kaldi_mel_banks(&o, &banks, &bins, &err) == SW_OK && bins == 257);
    int64_t samples = (int64_t)n, bank_shape[2] = {80, bins}, out_shape[2] = {(int64_t)frames, 80};
    sw_tensor x = upload(b, SW_F32, 1, &samples, audio);
    sw_tensor f = upload(b, SW_F32, 2, bank_shape, banks), y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 2, out_shape, &y, &err) == SW_OK);
    sw_fbank_params p = {400, 160, 512, 1, povey, scale, 0.97f};
    CHECK(sw_fbank_on_device(&x, &p, &f, &y, &err) == SW_OK);
    float *got = download(b, &y);
    double worst = 0.0;
    size_t same = 0;
    for (size_t i = 0; i < frames * 80; i++) {
        worst = fmax(worst, fabs((double)got[i] - (double)want[i]));
        same += got[i] == want[i];
    }
    printf("fbank povey %d, scale %g: %zu frames, worst %.3g, %.4f of the values equal\n", povey,
           scale, frames, worst, (double)same / (double)(frames * 80));
    /* the two FFTs' orders differ by a few 1e-16: float32 rounding apart */
    CHECK(worst <= 1e-5);
    CHECK(same >= frames * 80 * 9 / 10);
    /* an out whose frames are not the samples' is refused, not written past */
    sw_tensor part = sw_tensor_slice(&x, 0, 1, 399, 0, 0);
    CHECK(sw_fbank_on_device(&part, &p, &f, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    free(got);
    free(want);
    free(banks);
    sw_tensor_free(&x);
    sw_tensor_free(&f);
    sw_tensor_free(&y);
}

/* Three items of a real fbank's rows (repeats, an out-of-range id reading
 * zeros) against the host's double mean and subtraction. */
static void centered_pair(sw_backend *b, const float *audio, size_t n)
{
    sw_error err = {SW_OK, ""};
    sw_fbank_options o = sw_fbank_default_options();
    o.subtract_mean = 0;
    float *table = NULL;
    size_t frames = 0;
    CHECK(sw_fbank(audio, n, &o, NULL, &table, &frames, &err) == SW_OK && frames > 200);
    enum { ROWS = 650 };
    int32_t ids[ROWS];
    int64_t off[4] = {0, 300, 303, ROWS};
    for (int r = 0; r < ROWS; r++)
        ids[r] = (int32_t)((r * 37) % frames);
    ids[301] = (int32_t)frames; /* out of range: a row of zeros */
    float *want = malloc(sizeof *want * ROWS * 80);
    for (int it = 0; it < 3; it++)
        for (int c = 0; c < 80; c++) {
            double sum = 0.0;
            for (int64_t r = off[it]; r < off[it + 1]; r++)
                sum += ids[r] < (int32_t)frames ? (double)table[(size_t)ids[r] * 80 + c] : 0.0;
            double mean = sum / (double)(off[it + 1] - off[it]);
            for (int64_t r = off[it]; r < off[it + 1]; r++) {
                double v = ids[r] < (int32_t)frames ? (double)table[(size_t)ids[r] * 80 + c] : 0.0;
                want[r * 80 + c] = (float)(v - mean);
            }
        }
    int64_t t_shape[2] = {(int64_t)frames, 80}, n_ids = ROWS, o_shape[2] = {ROWS, 80};
    sw_tensor t = upload(b, SW_F32, 2, t_shape, table), d_ids = upload(b, SW_I32, 1, &n_ids, ids);
    sw_tensor y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 2, o_shape, &y, &err) == SW_OK);
    CHECK(sw_gather_centered(&t, &d_ids, 3, off, &y, &err) == SW_OK);
    float *got = download(b, &y);
    CHECK(memcmp(got, want, sizeof *want * ROWS * 80) == 0);
    /* an empty item, or offsets that do not end at the ids' count, refused */
    int64_t empty[4] = {0, 300, 300, ROWS}, short_end[4] = {0, 300, 303, ROWS - 1};
    CHECK(sw_gather_centered(&t, &d_ids, 3, empty, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_gather_centered(&t, &d_ids, 3, short_end, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    free(got);
    free(want);
    free(table);
    sw_tensor_free(&t);
    sw_tensor_free(&d_ids);
    sw_tensor_free(&y);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(2, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_device_features");
    if (!sw_supports(b, SW_CAP_FBANK, 0, 0)) {
        declined(b);
    } else {
        CHECK(b->fbank && b->gather_centered);
        char path[1024];
        snprintf(path, sizeof path, "%s/two_speakers.wav", SW_TEST_DATA);
        float *audio = NULL;
        size_t n = 0;
        CHECK(sw_audio_decode_file(path, 16000, &audio, &n, &err) == SW_OK);
        if (audio && n > 16000 * 8) {
            const float *speech = audio + 16000 * 5;       /* 3 s of two voices */
            fbank_pair(b, speech, 16000 * 3, 1, 1.0f);     /* CAM++'s */
            fbank_pair(b, speech, 16000 * 3, 0, 32768.0f); /* WeSpeaker's */
            centered_pair(b, speech, 16000 * 3);
        }
        free(audio);
    }
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
    return sw_check_summary("test_device_features");
}
