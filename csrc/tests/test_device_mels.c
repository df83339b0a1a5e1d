/* The table's ABI 16 entries (backend.h): GE2E's mel power frames made by
 * the backend, and rows gathered times their item's gain. On the CPU both
 * are declined (SW_CAP_MEL_POWER 0, the entries NULL, a call refused); on
 * the CUDA backend's kernels (test_device_mels_emulated) the mel power of
 * real speech is audio/mel.c's to float32 rounding, a span shorter than
 * the transform's reach reflected as the CPU reflects it, and the gathered
 * rows are the host's float32 products to the bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device_tensors.h"
#include "decode.h"
#include "fused_ops.h"
#include "mel.h"

static void declined(sw_backend *b)
{
    CHECK(!sw_supports(b, SW_CAP_MEL_POWER, 0, 0) && !b->mel_power && !b->gather_scaled);
    sw_error err = {SW_OK, ""};
    int64_t n = 400, shape[2] = {2, 40};
    float zeros[400] = {0};
    sw_tensor x = upload(b, SW_F32, 1, &n, zeros), y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 2, shape, &y, &err) == SW_OK);
    CHECK(sw_mel_power_on_device(&x, 400, 160, &x, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    sw_tensor_free(&x);
    sw_tensor_free(&y);
}

/* The device's mel power of `audio` against sw_mel_power's; returns the
 * device's table (host copy) for the gather. */
static float *mels_pair(sw_backend *b, const float *audio, size_t n, size_t *frames_out)
{
    sw_error err = {SW_OK, ""};
    float *want = NULL, *banks = NULL;
    size_t frames = 0;
    CHECK(sw_mel_power(audio, n, 40, NULL, &want, &frames, &err) == SW_OK);
    CHECK(sw_mel_filters(16000, 400, 40, &banks, &err) == SW_OK);
    int64_t samples = (int64_t)n, bank_shape[2] = {40, 201}, out_shape[2] = {(int64_t)frames, 40};
    sw_tensor x = upload(b, SW_F32, 1, &samples, audio);
    sw_tensor f = upload(b, SW_F32, 2, bank_shape, banks), y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 2, out_shape, &y, &err) == SW_OK);
    CHECK(sw_mel_power_on_device(&x, 400, 160, &f, &y, &err) == SW_OK);
    float *got = download(b, &y);
    double worst = 0.0, top = 0.0;
    for (size_t i = 0; i < frames * 40; i++) {
        double rel = fabs((double)got[i] - (double)want[i]) / fmax(fabs((double)want[i]), 1e-30);
        worst = fmax(worst, rel);
        top = fmax(top, fabs((double)want[i]));
    }
    printf("mel power of %zu samples: %zu frames, worst relative difference %.3g (largest %.3g)\n",
           n, frames, worst, top);
    /* the DFT's order is not the FFT's: a few float32 ulps, no more */
    CHECK(frames > 0 && worst <= 1e-5);
    /* an out whose frames are not the samples' is refused, not written past */
    sw_tensor part = sw_tensor_slice(&x, 0, 1, (int64_t)n - 160, 0, 0);
    CHECK(sw_mel_power_on_device(&part, 400, 160, &f, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    free(want);
    free(banks);
    sw_tensor_free(&x);
    sw_tensor_free(&f);
    sw_tensor_free(&y);
    *frames_out = frames;
    return got;
}

/* Two items of real mel rows (padding ids of -1 and one past the table:
 * zeros) times their gains, against the host's float32 products. */
static void scaled_pair(sw_backend *b, const float *table, size_t frames)
{
    sw_error err = {SW_OK, ""};
    enum { ITEMS = 2, T = 160 };
    int32_t ids[ITEMS * T];
    float gains[ITEMS] = {1.0f, 3.7182817f}, *want = malloc(sizeof *want * ITEMS * T * 40);
    for (int r = 0; r < ITEMS * T; r++)
        ids[r] = r % T < 150 ? (int32_t)((r * 7) % frames) : -1;
    ids[5] = (int32_t)frames;
    for (int r = 0; r < ITEMS * T; r++)
        for (int c = 0; c < 40; c++)
            want[r * 40 + c] = ids[r] >= 0 && ids[r] < (int32_t)frames
                                   ? table[(size_t)ids[r] * 40 + c] * gains[r / T]
                                   : 0.0f;
    int64_t t_shape[2] = {(int64_t)frames, 40}, n_ids = ITEMS * T, n_gains = ITEMS;
    int64_t o_shape[3] = {ITEMS, T, 40};
    sw_tensor t = upload(b, SW_F32, 2, t_shape, table), d_ids = upload(b, SW_I32, 1, &n_ids, ids);
    sw_tensor g = upload(b, SW_F32, 1, &n_gains, gains), y = {0};
    CHECK(sw_tensor_new(b, SW_F32, 3, o_shape, &y, &err) == SW_OK);
    CHECK(sw_gather_scaled(&t, &d_ids, &g, &y, &err) == SW_OK);
    float *got = download(b, &y);
    CHECK(memcmp(got, want, sizeof *want * ITEMS * T * 40) == 0);
    /* gains that are not one an item are refused */
    sw_tensor one = sw_tensor_slice(&g, 0, 1, 1, 0, 0);
    CHECK(sw_gather_scaled(&t, &d_ids, &one, &y, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    free(got);
    free(want);
    sw_tensor_free(&t);
    sw_tensor_free(&d_ids);
    sw_tensor_free(&g);
    sw_tensor_free(&y);
}

int main(void)
{
    sw_error err = {SW_OK, ""};
    sw_backend *b = NULL;
    CHECK(sw_test_backend_open(2, &b, &err) == SW_OK);
    if (!b)
        return sw_check_summary("test_device_mels");
    if (!sw_supports(b, SW_CAP_MEL_POWER, 0, 0)) {
        declined(b);
    } else {
        CHECK(b->mel_power && b->gather_scaled);
        char path[1024];
        snprintf(path, sizeof path, "%s/two_speakers.wav", SW_TEST_DATA);
        float *audio = NULL;
        size_t n = 0, frames = 0, few = 0;
        CHECK(sw_audio_decode_file(path, 16000, &audio, &n, &err) == SW_OK);
        if (audio && n > 16000 * 8) {
            const float *speech = audio + 16000 * 5; /* 3 s of two voices */
            float *table = mels_pair(b, speech, 16000 * 3, &frames);
            scaled_pair(b, table, frames);
            free(table);
            /* 330 samples: two frames, the first reaching before the start, the second past both
             * ends */
            free(mels_pair(b, speech + 16000, 330, &few));
            CHECK(few == 2);
        }
        free(audio);
    }
    CHECK(b->memory(b).allocated == 0);
    b->destroy(b);
    return sw_check_summary("test_device_mels");
}
