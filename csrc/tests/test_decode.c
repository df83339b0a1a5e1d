/* sw_audio_decode_file and sw_audio_resample on the real files in
 * SW_TEST_DATA and on small files this test writes: lengths, agreement
 * between codecs, the downmix, the resampler and every error path. */
#include "check.h"
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_dir[512];

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmp_dir, name);
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *n = (size_t)size;
    return data;
}

static void put_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)((v >> 8) & 0xff);
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)((v >> (8 * i)) & 0xff);
}

/* A canonical 44-byte-header WAV: tag 1 = PCM, 3 = IEEE float. */
static int write_wav(const char *path, int tag, int channels, int rate, int bits, const void *data,
                     size_t bytes)
{
    unsigned char *buf = malloc(44 + bytes);
    if (!buf)
        return -1;
    memcpy(buf, "RIFF", 4);
    put_u32(buf + 4, (uint32_t)(36 + bytes));
    memcpy(buf + 8, "WAVEfmt ", 8);
    put_u32(buf + 16, 16);
    put_u16(buf + 20, (unsigned)tag);
    put_u16(buf + 22, (unsigned)channels);
    put_u32(buf + 24, (uint32_t)rate);
    put_u32(buf + 28, (uint32_t)(rate * channels * bits / 8));
    put_u16(buf + 32, (unsigned)(channels * bits / 8));
    put_u16(buf + 34, (unsigned)bits);
    memcpy(buf + 36, "data", 4);
    put_u32(buf + 40, (uint32_t)bytes);
    if (bytes)
        memcpy(buf + 44, data, bytes);
    int rc = write_file(path, buf, 44 + bytes);
    free(buf);
    return rc;
}

/* The 16-bit PCM samples of a RIFF/WAVE file, read without FFmpeg. */
static int16_t *read_wav_s16(const char *path, int *channels, int *rate, size_t *frames)
{
    size_t n = 0;
    unsigned char *d = read_file(path, &n);
    int16_t *out = NULL;
    if (!d || n < 12 || memcmp(d, "RIFF", 4) || memcmp(d + 8, "WAVE", 4))
        goto done;
    int bits = 0;
    for (size_t pos = 12; pos + 8 <= n;) {
        uint32_t size = (uint32_t)d[pos + 4] | (uint32_t)d[pos + 5] << 8 |
                        (uint32_t)d[pos + 6] << 16 | (uint32_t)d[pos + 7] << 24;
        const unsigned char *body = d + pos + 8;
        if (!memcmp(d + pos, "fmt ", 4) && size >= 16) {
            *channels = body[2] | body[3] << 8;
            *rate = (int)(body[4] | body[5] << 8 | body[6] << 16 | (uint32_t)body[7] << 24);
            bits = body[14] | body[15] << 8;
        } else if (!memcmp(d + pos, "data", 4) && bits == 16 && *channels > 0) {
            if (size > n - pos - 8)
                size = (uint32_t)(n - pos - 8);
            *frames = size / 2 / (size_t)*channels;
            out = malloc(*frames * (size_t)*channels * sizeof *out);
            for (size_t i = 0; out && i < *frames * (size_t)*channels; i++)
                out[i] = (int16_t)(body[2 * i] | body[2 * i + 1] << 8);
            break;
        }
        pos += 8 + (size_t)size + (size & 1);
    }
done:
    free(d);
    return out;
}

/* Where the samples of a WAV image start (after the "data" chunk header). */
static size_t wav_data_start(const unsigned char *d, size_t n)
{
    for (size_t pos = 12; pos + 8 <= n;) {
        uint32_t size = (uint32_t)d[pos + 4] | (uint32_t)d[pos + 5] << 8 |
                        (uint32_t)d[pos + 6] << 16 | (uint32_t)d[pos + 7] << 24;
        if (!memcmp(d + pos, "data", 4))
            return pos + 8;
        pos += 8 + (size_t)size + (size & 1);
    }
    return 0;
}

static double rms(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return n ? sqrt(s / n) : 0;
}

/* Largest normalised correlation of a and b over lags in [-max_lag, max_lag];
 * *best_lag receives the lag (b shifted by it matches a). */
static double best_correlation(const float *a, size_t na, const float *b, size_t nb, int max_lag,
                               int *best_lag)
{
    double best = -2;
    for (int lag = -max_lag; lag <= max_lag; lag++) {
        double sab = 0, saa = 0, sbb = 0;
        for (size_t i = 0; i < na; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= nb)
                continue;
            sab += (double)a[i] * b[j];
            saa += (double)a[i] * a[i];
            sbb += (double)b[j] * b[j];
        }
        double c = saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
        if (c > best) {
            best = c;
            *best_lag = lag;
        }
    }
    return best;
}

static sw_status decode(const char *name, int rate, float **out, size_t *n, sw_error *err)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SW_TEST_DATA, name);
    sw_error_clear(err);
    return sw_audio_decode_file(path, rate, out, n, err);
}

static void test_real_files(void)
{
    sw_error err;
    float *wav = NULL, *flac = NULL, *mp3 = NULL;
    size_t n_wav = 0, n_flac = 0, n_mp3 = 0;
    CHECK(decode("jfk.wav", 16000, &wav, &n_wav, &err) == SW_OK);
    CHECK(decode("jfk.flac", 16000, &flac, &n_flac, &err) == SW_OK);
    CHECK(decode("jfk.mp3", 16000, &mp3, &n_mp3, &err) == SW_OK);
    if (!wav || !flac || !mp3) {
        fprintf(stderr, "decoding the jfk files failed: %s\n", err.msg);
        CHECK(0);
        goto done;
    }
    /* 11 s at 16 kHz. */
    CHECK(n_wav == 176000);
    CHECK_NEAR(n_flac, 176000, 16);
    CHECK_NEAR(n_mp3, 176000, 800);
    CHECK(rms(wav, n_wav) > 0.05);

    /* jfk.flac is 44.1 kHz stereo 24-bit, so it meets the wav through the
     * resampler: equal up to resampling error, not bit for bit (the Python
     * test checks bit-identity on a flac made from the wav). */
    size_t n = n_wav < n_flac ? n_wav : n_flac;
    double max_diff = 0, sq = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)wav[i] - flac[i]);
        max_diff = d > max_diff ? d : max_diff;
        sq += d * d;
    }
    CHECK(max_diff < 1e-3);
    CHECK(sqrt(sq / n) < 1e-4);

    /* mp3: within codec error once aligned. */
    int lag = 0;
    size_t seg = 32000;
    double c = best_correlation(wav + 16000, seg, mp3 + 16000, seg, 400, &lag);
    printf("mp3 vs wav: correlation %.6f at lag %d, %zu vs %zu samples\n", c, lag, n_mp3, n_wav);
    CHECK(c > 0.995);
    CHECK(abs(lag) <= 400);
    double r = rms(mp3, n_mp3) / rms(wav, n_wav);
    CHECK(r > 0.95 && r < 1.05);

    /* Other output rates: the length scales. */
    float *x = NULL;
    size_t nx = 0;
    CHECK(decode("jfk.wav", 8000, &x, &nx, &err) == SW_OK);
    CHECK_NEAR(nx, 88000, 2);
    free(x);
    x = NULL;
    CHECK(decode("jfk.wav", 44100, &x, &nx, &err) == SW_OK);
    CHECK_NEAR(nx, 485100, 2);
    free(x);
    x = NULL;
    CHECK(decode("jfk.flac", 44100, &x, &nx, &err) == SW_OK);
    CHECK_NEAR(nx, 485100, 2);
    free(x);
done:
    free(wav);
    free(flac);
    free(mp3);
}

static void test_stereo_downmix(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/stereo_two_speakers.wav", SW_TEST_DATA);
    int channels = 0, rate = 0;
    size_t frames = 0;
    int16_t *pcm = read_wav_s16(path, &channels, &rate, &frames);
    CHECK(pcm != NULL);
    CHECK(channels == 2);
    CHECK(rate == 16000);
    if (!pcm || channels != 2)
        return;
    sw_error err = {0};
    float *mono = NULL;
    size_t n = 0;
    CHECK(sw_audio_decode_file(path, rate, &mono, &n, &err) == SW_OK);
    CHECK(n == frames);
    double max_diff = 0, diff_lr = 0;
    for (size_t i = 0; mono && i < n && i < frames; i++) {
        double l = pcm[2 * i] / 32768.0, r = pcm[2 * i + 1] / 32768.0;
        double d = fabs(mono[i] - (l + r) / 2);
        max_diff = d > max_diff ? d : max_diff;
        diff_lr += fabs(l - r);
    }
    printf("stereo downmix: max |mono - (L+R)/2| = %.3g\n", max_diff);
    CHECK(max_diff < 1e-6);
    CHECK(diff_lr > 1.0); /* the two channels really differ */

    /* sw_audio_resample of the same frames gives the same mono. */
    float *inter = malloc(frames * 2 * sizeof *inter);
    float *mono2 = NULL;
    size_t n2 = 0;
    for (size_t i = 0; inter && i < frames * 2; i++)
        inter[i] = pcm[i] / 32768.0f;
    CHECK(inter && sw_audio_resample(inter, frames, 2, rate, rate, &mono2, &n2, &err) == SW_OK);
    CHECK(n2 == n);
    max_diff = 0;
    for (size_t i = 0; mono && mono2 && i < n && i < n2; i++)
        max_diff = fmax(max_diff, fabs(mono[i] - mono2[i]));
    CHECK(max_diff < 1e-6);
    free(mono2);

    /* And to 8 kHz: half the length. */
    mono2 = NULL;
    CHECK(inter && sw_audio_resample(inter, frames, 2, rate, 8000, &mono2, &n2, &err) == SW_OK);
    CHECK_NEAR(n2, frames / 2, 1);
    free(mono2);
    free(inter);
    free(mono);
    free(pcm);
}

/* Frequency of a sine from its zero crossings. */
static double sine_frequency(const float *x, size_t n, int rate)
{
    size_t first = 0, last = 0, count = 0;
    for (size_t i = 1; i < n; i++) {
        if (x[i - 1] < 0 && x[i] >= 0) {
            if (!count)
                first = i;
            last = i;
            count++;
        }
    }
    return count > 1 ? (double)(count - 1) * rate / (double)(last - first) : 0;
}

static void test_resample(void)
{
    const int in_rate = 44100;
    const size_t frames = 44100 * 2;
    float *in = malloc(frames * 2 * sizeof *in);
    CHECK(in != NULL);
    if (!in)
        return;
    for (size_t i = 0; i < frames; i++) {
        float s = (float)(0.5 * sin(2 * M_PI * 440.0 * (double)i / in_rate));
        in[2 * i] = s;
        in[2 * i + 1] = s;
    }
    sw_error err = {0};
    float *out = NULL;
    size_t n = 0;
    CHECK(sw_audio_resample(in, frames, 2, in_rate, 16000, &out, &n, &err) == SW_OK);
    CHECK_NEAR(n, 32000, 2);
    if (out) {
        CHECK_NEAR(sine_frequency(out + 1000, n - 2000, 16000), 440.0, 0.5);
        CHECK_NEAR(rms(out + 1000, n - 2000), 0.5 / sqrt(2.0), 0.01);
    }
    free(out);

    /* Same rate, mono: a copy. */
    out = NULL;
    CHECK(sw_audio_resample(in, frames, 1, 16000, 16000, &out, &n, &err) == SW_OK);
    CHECK(n == frames);
    int same = out != NULL;
    for (size_t i = 0; out && i < n; i++)
        same &= out[i] == in[i];
    CHECK(same);
    free(out);

    /* Argument checks. */
    out = (float *)1;
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 0, 16000, 16000, &out, &n, &err) == SW_ERR_ARG);
    CHECK(out == NULL && n == 0);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, 10, 65, 16000, 16000, &out, &n, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 1, 999, 16000, &out, &n, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 1, 16000, 384001, &out, &n, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(NULL, frames, 1, 16000, 16000, &out, &n, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 1, 16000, 16000, NULL, &n, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, 0, 1, 16000, 16000, &out, &n, &err) == SW_ERR_AUDIO);
    in[777] = NAN;
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 2, 44100, 16000, &out, &n, &err) == SW_ERR_AUDIO);
    CHECK(strstr(err.msg, "finite") != NULL);
    in[777] = INFINITY;
    sw_error_clear(&err);
    CHECK(sw_audio_resample(in, frames, 1, 16000, 16000, &out, &n, &err) == SW_ERR_AUDIO);
    CHECK(out == NULL);
    free(in);
}

/* Files this test writes: formats and layouts beyond the shared data. */
static void test_written_files(void)
{
    char path[1024];
    sw_error err = {0};
    float *out = NULL;
    size_t n = 0;

    /* 6 channels at 48 kHz and 10 channels (no standard layout) at 22050. */
    static const int layouts[][2] = {{6, 48000}, {10, 22050}, {1, 8000}};
    for (size_t k = 0; k < sizeof layouts / sizeof layouts[0]; k++) {
        int ch = layouts[k][0], rate = layouts[k][1];
        size_t frames = (size_t)rate; /* 1 s */
        int16_t *pcm = malloc(frames * (size_t)ch * sizeof *pcm);
        float *flt = malloc(frames * (size_t)ch * sizeof *flt);
        if (!pcm || !flt) {
            CHECK(0);
            free(pcm);
            free(flt);
            return;
        }
        for (size_t i = 0; i < frames; i++) {
            for (int c = 0; c < ch; c++) {
                double v = 0.3 * sin(2 * M_PI * (200.0 + 50 * c) * (double)i / rate);
                pcm[i * ch + c] = (int16_t)lrint(v * 32767);
                flt[i * ch + c] = pcm[i * ch + c] / 32768.0f;
            }
        }
        snprintf(path, sizeof path, "%s/multi_%d.wav", tmp_dir, ch);
        CHECK(write_wav(path, 1, ch, rate, 16, pcm, frames * (size_t)ch * 2) == 0);
        out = NULL;
        sw_error_clear(&err);
        sw_status st = sw_audio_decode_file(path, 16000, &out, &n, &err);
        if (st != SW_OK)
            fprintf(stderr, "%d channels: %s\n", ch, err.msg);
        CHECK(st == SW_OK);
        CHECK_NEAR(n, 16000, 2);
        float *ref = NULL;
        size_t nref = 0;
        CHECK(sw_audio_resample(flt, frames, ch, rate, 16000, &ref, &nref, &err) == SW_OK);
        CHECK(n == nref);
        double max_diff = 0;
        for (size_t i = 0; out && ref && i < n && i < nref; i++)
            max_diff = fmax(max_diff, fabs(out[i] - ref[i]));
        CHECK(max_diff < 1e-5);
        free(ref);
        free(out);
        free(pcm);
        free(flt);
    }

    /* Float wav with a NaN in one packet: that packet is zeroed, the file
     * still decodes, and nothing non-finite comes out. */
    size_t frames = 32000;
    float *flt = malloc(frames * sizeof *flt);
    if (!flt) {
        CHECK(0);
        return;
    }
    for (size_t i = 0; i < frames; i++)
        flt[i] = (float)(0.25 * sin(2 * M_PI * 300.0 * (double)i / 16000));
    flt[5000] = NAN;
    flt[5001] = INFINITY;
    tmp_path(path, sizeof path, "float_nan.wav");
    CHECK(write_wav(path, 3, 1, 16000, 32, flt, frames * sizeof *flt) == 0);
    out = NULL;
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file(path, 16000, &out, &n, &err) == SW_OK);
    CHECK(n == frames);
    int finite = out != NULL;
    for (size_t i = 0; out && i < n; i++)
        finite &= isfinite(out[i]) != 0;
    CHECK(finite);
    if (out && n == frames) {
        CHECK(out[5000] == 0.0f);
        CHECK(out[4000] == flt[4000]);
    }
    free(out);

    /* All-NaN float wav: every packet fails. */
    for (size_t i = 0; i < frames; i++)
        flt[i] = NAN;
    tmp_path(path, sizeof path, "float_all_nan.wav");
    CHECK(write_wav(path, 3, 1, 16000, 32, flt, frames * sizeof *flt) == 0);
    out = NULL;
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file(path, 16000, &out, &n, &err) == SW_ERR_AUDIO);
    CHECK(strstr(err.msg, "corrupt") != NULL);
    CHECK(out == NULL && n == 0);
    free(flt);
}

static void expect_error(const char *path, int rate, sw_status code, const char *needle)
{
    sw_error err = {0};
    float *out = (float *)1;
    size_t n = 1;
    sw_status st = sw_audio_decode_file(path, rate, &out, &n, &err);
    if (st != code || (needle && !strstr(err.msg, needle)))
        fprintf(stderr, "%s: got %s \"%s\", expected %s \"%s\"\n", path, sw_status_name(st),
                err.msg, sw_status_name(code), needle ? needle : "");
    CHECK(st == code);
    CHECK(err.code == code);
    CHECK(out == NULL && n == 0);
    if (needle)
        CHECK(strstr(err.msg, needle) != NULL);
    /* The message leaves the path to the caller. */
    const char *base = strrchr(path, '/');
    if (base && strlen(base) > 4)
        CHECK(strstr(err.msg, base + 1) == NULL);
}

static void test_errors(void)
{
    char path[1024], src[1024];
    tmp_path(path, sizeof path, "does_not_exist.wav");
    expect_error(path, 16000, SW_ERR_IO, "No such file");
    expect_error(tmp_dir, 16000, SW_ERR_IO, "directory");

    tmp_path(path, sizeof path, "empty.wav");
    CHECK(write_file(path, "", 0) == 0);
    expect_error(path, 16000, SW_ERR_AUDIO, "empty");

    tmp_path(path, sizeof path, "notes.txt");
    const char *text = "These are not the samples you are looking for.\nJust some text.\n";
    CHECK(write_file(path, text, strlen(text)) == 0);
    expect_error(path, 16000, SW_ERR_AUDIO, NULL);

    tmp_path(path, sizeof path, "notes.wav");
    CHECK(write_file(path, text, strlen(text)) == 0);
    expect_error(path, 16000, SW_ERR_AUDIO, "not a recognised");

    /* Header only: a wav that declares no samples, and jfk.wav cut after its
     * header. */
    tmp_path(path, sizeof path, "header_only.wav");
    CHECK(write_wav(path, 1, 1, 16000, 16, NULL, 0) == 0);
    expect_error(path, 16000, SW_ERR_AUDIO, "no samples");
    snprintf(src, sizeof src, "%s/jfk.wav", SW_TEST_DATA);
    size_t n = 0;
    unsigned char *wav = read_file(src, &n);
    size_t start = wav ? wav_data_start(wav, n) : 0;
    CHECK(wav != NULL && start > 44 && n > start + 88000 * 2);
    if (wav && start > 44 && n > start + 88000 * 2) {
        tmp_path(path, sizeof path, "jfk_header.wav");
        CHECK(write_file(path, wav, start) == 0);
        expect_error(path, 16000, SW_ERR_AUDIO, "no samples");
        /* Cut in the header itself. */
        tmp_path(path, sizeof path, "jfk_cut_header.wav");
        CHECK(write_file(path, wav, 20) == 0);
        expect_error(path, 16000, SW_ERR_AUDIO, NULL);
        /* Cut in the middle: what is there decodes. */
        tmp_path(path, sizeof path, "jfk_half.wav");
        CHECK(write_file(path, wav, start + 88000 * 2) == 0);
        sw_error err = {0};
        float *out = NULL;
        size_t m = 0;
        CHECK(sw_audio_decode_file(path, 16000, &out, &m, &err) == SW_OK);
        CHECK(m == 88000);
        free(out);
    }
    free(wav);

    /* Random bytes. */
    unsigned char junk[4096];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 1664525u + 1013904223u;
        junk[i] = (unsigned char)(s >> 24);
    }
    tmp_path(path, sizeof path, "random.bin");
    CHECK(write_file(path, junk, sizeof junk) == 0);
    expect_error(path, 16000, SW_ERR_AUDIO, NULL);

    /* Unreadable (unless we are root, who reads everything). */
    tmp_path(path, sizeof path, "secret.wav");
    snprintf(src, sizeof src, "%s/jfk.wav", SW_TEST_DATA);
    if (geteuid() != 0) {
        CHECK(write_file(path, "RIFF", 4) == 0);
        CHECK(chmod(path, 0) == 0);
        expect_error(path, 16000, SW_ERR_IO, "Permission denied");
    }

    /* A colon in the name is a file name, not a protocol. */
    tmp_path(path, sizeof path, "http:colon.wav");
    size_t nw = 0;
    unsigned char *w = read_file(src, &nw);
    CHECK(w && write_file(path, w, nw) == 0);
    free(w);
    sw_error err = {0};
    float *out = NULL;
    size_t m = 0;
    CHECK(sw_audio_decode_file(path, 16000, &out, &m, &err) == SW_OK);
    CHECK(m == 176000);
    free(out);

    /* Arguments. */
    expect_error(src, 999, SW_ERR_ARG, "sample_rate");
    expect_error(src, 384001, SW_ERR_ARG, "sample_rate");
    expect_error(src, -16000, SW_ERR_ARG, NULL);
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file(NULL, 16000, &out, &m, &err) == SW_ERR_ARG);
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file(src, 16000, NULL, &m, &err) == SW_ERR_ARG);
    /* A NULL error pointer is allowed. */
    CHECK(sw_audio_decode_file(src, 1, &out, &m, NULL) == SW_ERR_ARG);
}

typedef struct job {
    const char *name;
    float *out;
    size_t n;
    sw_status st;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    sw_error err = {0};
    j->st = decode(j->name, 16000, &j->out, &j->n, &err);
    return NULL;
}

static void test_threads(void)
{
    job jobs[6] = {{"jfk.mp3", NULL, 0, SW_OK},  {"jfk.flac", NULL, 0, SW_OK},
                   {"jfk.wav", NULL, 0, SW_OK},  {"jfk.mp3", NULL, 0, SW_OK},
                   {"jfk.flac", NULL, 0, SW_OK}, {"jfk.wav", NULL, 0, SW_OK}};
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        CHECK(pthread_create(&t[i], NULL, run_job, &jobs[i]) == 0);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) {
        CHECK(jobs[i].st == SW_OK && jobs[i + 3].st == SW_OK);
        CHECK(jobs[i].n == jobs[i + 3].n);
        CHECK(jobs[i].out && jobs[i + 3].out &&
              memcmp(jobs[i].out, jobs[i + 3].out, jobs[i].n * sizeof(float)) == 0);
    }
    for (int i = 0; i < 6; i++)
        free(jobs[i].out);
}

/* A recording longer than spill_after goes to the file, bit for bit what
 * sw_audio_decode_file gives; a shorter one comes back in memory and writes
 * nothing; an unwritable descriptor is an I/O error. */
static void test_spill(void)
{
    sw_error err = {0};
    float *whole = NULL, *out = NULL;
    size_t n_whole = 0, n = 0;
    char src[1024], path[1024];
    snprintf(src, sizeof src, "%s/jfk.flac", SW_TEST_DATA);
    tmp_path(path, sizeof path, "spill.f32");
    CHECK(sw_audio_decode_file(src, 16000, &whole, &n_whole, &err) == SW_OK);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    /* past the first spill and several pieces of 2^20 samples at 44.1 kHz */
    float *big = NULL;
    size_t n_big = 0;
    CHECK(sw_audio_decode_file(src, 384000, &big, &n_big, &err) == SW_OK);
    CHECK(n_big > 3 * ((size_t)1 << 20));
    CHECK(sw_audio_decode_file_spill(src, 384000, fd, 1000, &out, &n, &err) == SW_OK);
    CHECK(out == NULL && n == n_big);
    size_t bytes = 0;
    unsigned char *written = read_file(path, &bytes);
    CHECK(written && bytes == n_big * sizeof(float));
    CHECK(written && memcmp(written, big, bytes) == 0);
    free(written);
    free(big);
    /* shorter than spill_after: in memory, the file untouched */
    CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
    CHECK(sw_audio_decode_file_spill(src, 16000, fd, n_whole + 1, &out, &n, &err) == SW_OK);
    CHECK(out != NULL && n == n_whole && memcmp(out, whole, n * sizeof(float)) == 0);
    CHECK(lseek(fd, 0, SEEK_END) == 0);
    free(out);
    out = NULL;
    close(fd);
    unlink(path);
    /* a descriptor that cannot be written */
    int ro = open(src, O_RDONLY);
    CHECK(ro >= 0);
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file_spill(src, 16000, ro, 1000, &out, &n, &err) == SW_ERR_IO);
    CHECK(out == NULL && n == 0 && strstr(err.msg, "cannot write") != NULL);
    close(ro);
    sw_error_clear(&err);
    CHECK(sw_audio_decode_file_spill(src, 16000, -1, 1000, &out, &n, &err) == SW_ERR_ARG);
    free(whole);
}

static void remove_tree(void)
{
    static const char *names[] = {
        "multi_6.wav",        "multi_10.wav", "multi_1.wav", "float_nan.wav",   "float_all_nan.wav",
        "empty.wav",          "notes.txt",    "notes.wav",   "header_only.wav", "jfk_header.wav",
        "jfk_cut_header.wav", "jfk_half.wav", "random.bin",  "secret.wav",      "http:colon.wav"};
    char path[1024];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        tmp_path(path, sizeof path, names[i]);
        unlink(path);
    }
    rmdir(tmp_dir);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/sw_test_decode_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_real_files();
    test_stereo_downmix();
    test_resample();
    test_written_files();
    test_errors();
    test_threads();
    test_spill();
    remove_tree();
    return sw_check_summary("test_decode");
}
