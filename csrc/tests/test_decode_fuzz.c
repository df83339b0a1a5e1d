/* A deterministic fuzzer for sw_audio_decode_file: mutated copies of real
 * files (truncations, bit flips, random byte runs, cut and spliced regions,
 * header-only prefixes), pure random bytes and empty files. Every decode must
 * return SW_OK with finite samples, SW_ERR_AUDIO or SW_ERR_IO: never crash,
 * never leak (CI runs this under ASan+UBSan with LeakSanitizer), never leave
 * a file descriptor open.
 *
 * SW_FUZZ_ITERS (default 1200) and SW_FUZZ_SEED (default 20240611) change the
 * run; the same seed always makes the same files. SW_FUZZ_VERBOSE=1 prints
 * every error message. */
#include "check.h"
#include "decode.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* splitmix64: small, seedable, the same everywhere. */
static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static size_t rng_below(size_t n)
{
    return (size_t)(rng_next() % (uint64_t)n);
}

typedef struct seed {
    char name[64];
    char ext[8];
    unsigned char *data;
    size_t size;
} seed;

#define MAX_SEEDS 24
static seed seeds[MAX_SEEDS];
static int n_seeds;
static char tmp_dir[512];

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0 && fseek(f, 0, SEEK_SET) == 0) {
            data = malloc((size_t)size);
            if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
                free(data);
                data = NULL;
            }
            *n = (size_t)size;
        }
    }
    fclose(f);
    return data;
}

static int write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static void add_seed(const char *path, const char *name)
{
    if (n_seeds >= MAX_SEEDS)
        return;
    seed *s = &seeds[n_seeds];
    s->data = read_file(path, &s->size);
    if (!s->data) {
        fprintf(stderr, "seed %s: cannot read %s\n", name, path);
        return;
    }
    snprintf(s->name, sizeof s->name, "%s", name);
    const char *dot = strrchr(name, '.');
    snprintf(s->ext, sizeof s->ext, "%s", dot ? dot : ".bin");
    n_seeds++;
}

static void put_le(unsigned char *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)((v >> (8 * i)) & 0xff);
}

/* A WAV seed this test makes: tag 1 = PCM, 3 = float, half a second. */
static void add_wav_seed(const char *name, int tag, int channels, int rate, int bits)
{
    size_t frames = (size_t)rate / 2, bps = (size_t)bits / 8;
    size_t bytes = frames * (size_t)channels * bps;
    unsigned char *buf = malloc(44 + bytes);
    if (!buf)
        return;
    memcpy(buf, "RIFF", 4);
    put_le(buf + 4, (uint32_t)(36 + bytes), 4);
    memcpy(buf + 8, "WAVEfmt ", 8);
    put_le(buf + 16, 16, 4);
    put_le(buf + 20, (uint32_t)tag, 2);
    put_le(buf + 22, (uint32_t)channels, 2);
    put_le(buf + 24, (uint32_t)rate, 4);
    put_le(buf + 28, (uint32_t)(rate * channels * bits / 8), 4);
    put_le(buf + 32, (uint32_t)(channels * bits / 8), 2);
    put_le(buf + 34, (uint32_t)bits, 2);
    memcpy(buf + 36, "data", 4);
    put_le(buf + 40, (uint32_t)bytes, 4);
    unsigned char *p = buf + 44;
    for (size_t i = 0; i < frames; i++) {
        for (int c = 0; c < channels; c++) {
            double v = 0.4 * sin(2 * M_PI * (220.0 + 110 * c) * (double)i / rate);
            if (tag == 3) {
                float f = (float)v;
                memcpy(p, &f, 4);
            } else if (bits == 8) {
                p[0] = (unsigned char)lrint(128 + v * 127);
            } else {
                int32_t s = (int32_t)lrint(v * (double)((1u << (bits - 1)) - 1));
                put_le(p, (uint32_t)s, (int)bps);
            }
            p += bps;
        }
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
    if (write_file(path, buf, 44 + bytes) == 0)
        add_seed(path, name);
    unlink(path);
    free(buf);
}

/* More containers and codecs when the ffmpeg CLI is at hand (optional). */
static void add_ffmpeg_seeds(void)
{
    if (system("ffmpeg -version >/dev/null 2>&1") != 0) {
        printf("ffmpeg CLI not found: fuzzing the wav, flac and mp3 seeds only\n");
        return;
    }
    static const struct {
        const char *name;
        const char *args;
    } made[] = {
        {"seed.ogg", "-c:a libvorbis"},
        {"seed.opus", "-c:a libopus -b:a 24k"},
        {"seed.m4a", "-c:a aac -b:a 48k"},
        {"seed.mkv", "-c:a flac"},
        {"seed.webm", "-c:a libopus"},
        {"seed_adpcm.wav", "-c:a adpcm_ima_wav"},
        {"seed.aiff", "-c:a pcm_s16be -ac 2 -ar 22050"},
    };
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        char path[1024], cmd[2048];
        snprintf(path, sizeof path, "%s/%s", tmp_dir, made[i].name);
        snprintf(cmd, sizeof cmd,
                 "ffmpeg -nostdin -v quiet -y -t 3 -i '%s/jfk.wav' %s '%s' >/dev/null 2>&1",
                 SW_TEST_DATA, made[i].args, path);
        if (system(cmd) == 0)
            add_seed(path, made[i].name);
        unlink(path);
    }
}

enum mutation {
    M_TRUNCATE,
    M_BITFLIP,
    M_HEADER_BITFLIP,
    M_BYTE_RUNS,
    M_ZERO_RUN,
    M_SPLICE,
    M_HEADER_ONLY,
    M_TRUNCATE_AND_FLIP,
    M_RANDOM,
    M_EMPTY,
    M_COUNT
};

static const char *mutation_names[M_COUNT] = {
    "truncate",      "bit flips",   "header bit flips", "random byte runs", "zeroed run",
    "cut/duplicate", "header only", "truncate+flips",   "pure random",      "zero length"};

/* Makes one mutated file image in *buf (malloc'ed); returns its size. */
static size_t mutate(enum mutation m, const seed *s, unsigned char **buf)
{
    size_t n = s->size, cap = s->size + 65536;
    unsigned char *b = malloc(cap);
    *buf = b;
    if (!b)
        return 0;
    memcpy(b, s->data, n);
    switch (m) {
    case M_TRUNCATE: n = rng_below(n); break;
    case M_BITFLIP: {
        size_t k = 1 + rng_below(16);
        for (size_t i = 0; i < k; i++)
            b[rng_below(n)] ^= (unsigned char)(1u << rng_below(8));
        break;
    }
    case M_HEADER_BITFLIP: {
        size_t span = n < 128 ? n : 128, k = 1 + rng_below(4);
        for (size_t i = 0; i < k; i++)
            b[rng_below(span)] ^= (unsigned char)(1u << rng_below(8));
        break;
    }
    case M_BYTE_RUNS: {
        size_t runs = 1 + rng_below(4);
        for (size_t r = 0; r < runs; r++) {
            size_t at = rng_below(n), len = 1 + rng_below(256);
            for (size_t i = at; i < n && i < at + len; i++)
                b[i] = (unsigned char)rng_next();
        }
        break;
    }
    case M_ZERO_RUN: {
        size_t at = rng_below(n), len = 1 + rng_below(4096);
        memset(b + at, rng_below(2) ? 0x00 : 0xff, at + len < n ? len : n - at);
        break;
    }
    case M_SPLICE: {
        /* Cut a region out, or copy one over another place (shifting the
         * rest), which breaks the framing without touching byte values. */
        size_t at = rng_below(n), len = 1 + rng_below(n - at < 8192 ? n - at : 8192);
        if (rng_below(2)) {
            memmove(b + at, b + at + len, n - at - len);
            n -= len;
        } else {
            size_t to = rng_below(n), l = len < 65536 ? len : 65536;
            memmove(b + to + l, b + to, n - to);
            memcpy(b + to, s->data + at, l);
            n += l;
        }
        break;
    }
    case M_HEADER_ONLY: n = 1 + rng_below(n < 1024 ? n : 1024); break;
    case M_TRUNCATE_AND_FLIP: {
        n = 1 + rng_below(n);
        size_t k = 1 + rng_below(8);
        for (size_t i = 0; i < k; i++)
            b[rng_below(n)] ^= (unsigned char)(1u << rng_below(8));
        break;
    }
    case M_RANDOM: {
        /* Sizes from 1 byte to 64 KiB, log-uniform. */
        n = (size_t)1 << rng_below(17);
        n += rng_below(n);
        if (n > cap)
            n = cap;
        for (size_t i = 0; i < n; i++)
            b[i] = (unsigned char)rng_next();
        break;
    }
    case M_EMPTY:
    case M_COUNT: n = 0; break;
    }
    return n;
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

int main(void)
{
    const char *iters_env = getenv("SW_FUZZ_ITERS"), *seed_env = getenv("SW_FUZZ_SEED");
    long iters = iters_env ? strtol(iters_env, NULL, 10) : 1200;
    rng_state = seed_env ? strtoull(seed_env, NULL, 10) : 20240611ull;
    int verbose = getenv("SW_FUZZ_VERBOSE") != NULL;
    if (iters < 1)
        iters = 1;
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof tmp_dir, "%s/sw_fuzz_decode_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }

    static const char *real[] = {"jfk.wav", "jfk.flac", "jfk.mp3", "stereo_two_speakers.wav",
                                 "two_speakers.wav"};
    for (size_t i = 0; i < sizeof real / sizeof real[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SW_TEST_DATA, real[i]);
        add_seed(path, real[i]);
    }
    CHECK(n_seeds == 5);
    add_wav_seed("float32.wav", 3, 1, 16000, 32);
    add_wav_seed("u8.wav", 1, 1, 8000, 8);
    add_wav_seed("s24_stereo.wav", 1, 2, 44100, 24);
    add_wav_seed("s16_6ch.wav", 1, 6, 48000, 16);
    add_ffmpeg_seeds();
    printf("%d seed files\n", n_seeds);

    /* Every seed decodes cleanly before it is mutated. */
    sw_error err;
    for (int i = 0; i < n_seeds; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/clean%s", tmp_dir, seeds[i].ext);
        CHECK(write_file(path, seeds[i].data, seeds[i].size) == 0);
        float *out = NULL;
        size_t n = 0;
        sw_error_clear(&err);
        sw_status st = sw_audio_decode_file(path, 16000, &out, &n, &err);
        if (st != SW_OK)
            fprintf(stderr, "seed %s: %s\n", seeds[i].name, err.msg);
        CHECK(st == SW_OK && n > 0);
        free(out);
        unlink(path);
    }

    static const int rates[] = {16000, 16000, 16000, 8000, 22050, 44100};
    long outcome[4] = {0}; /* ok, audio, io, other */
    long by_kind[M_COUNT][2] = {{0}};
    int fds_before = count_fds();
    clock_t t0 = clock();
    for (long it = 0; it < iters; it++) {
        enum mutation m = (enum mutation)rng_below(M_COUNT);
        const seed *s = &seeds[rng_below((size_t)n_seeds)];
        int rate = rates[rng_below(sizeof rates / sizeof rates[0])];
        unsigned char *buf = NULL;
        size_t n = mutate(m, s, &buf);
        char path[1024];
        snprintf(path, sizeof path, "%s/m%05ld%s", tmp_dir, it,
                 m == M_RANDOM && rng_below(2) ? ".bin" : s->ext);
        int wrote = buf && write_file(path, buf, n) == 0;
        free(buf);
        CHECK(wrote);
        if (!wrote)
            continue;

        float *out = NULL;
        size_t n_out = 0;
        sw_error_clear(&err);
        sw_status st = sw_audio_decode_file(path, rate, &out, &n_out, &err);
        unlink(path);
        if (st == SW_OK) {
            outcome[0]++;
            by_kind[m][0]++;
            int finite = out != NULL && n_out > 0 && n_out <= SW_AUDIO_MAX_SAMPLES;
            for (size_t i = 0; finite && i < n_out; i++)
                finite = isfinite(out[i]) && fabsf(out[i]) <= 65536.0f;
            if (!finite)
                fprintf(stderr, "iteration %ld (%s of %s): bad samples\n", it, mutation_names[m],
                        s->name);
            CHECK(finite);
        } else {
            by_kind[m][1]++;
            if (verbose)
                printf("iteration %ld (%s of %s): %s: %s\n", it, mutation_names[m], s->name,
                       sw_status_name(st), err.msg);
            if (st == SW_ERR_AUDIO)
                outcome[1]++;
            else if (st == SW_ERR_IO)
                outcome[2]++;
            else {
                outcome[3]++;
                fprintf(stderr, "iteration %ld (%s of %s): %s: %s\n", it, mutation_names[m],
                        s->name, sw_status_name(st), err.msg);
            }
            CHECK(out == NULL && n_out == 0);
            CHECK(err.msg[0] != '\0');
        }
        free(out);
    }
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    int fds_after = count_fds();
    CHECK(fds_before == fds_after);

    printf("%ld mutated files in %.1f s of CPU: %ld ok, %ld SW_ERR_AUDIO, %ld SW_ERR_IO, "
           "%ld other\n",
           iters, secs, outcome[0], outcome[1], outcome[2], outcome[3]);
    for (int m = 0; m < M_COUNT; m++)
        printf("  %-18s %4ld ok %4ld error\n", mutation_names[m], by_kind[m][0], by_kind[m][1]);
    CHECK(outcome[3] == 0);
    CHECK(outcome[0] + outcome[1] + outcome[2] == iters);

    for (int i = 0; i < n_seeds; i++)
        free(seeds[i].data);
    rmdir(tmp_dir);
    return sw_check_summary("test_decode_fuzz");
}
