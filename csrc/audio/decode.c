/* Decoding with FFmpeg's libraries (5.1 API: AVChannelLayout, send/receive)
 * and conversion to mono float32 with libswresample.
 *
 * Corruption policy (docs/audio.md): packets the decoder rejects are skipped
 * like the ffmpeg CLI does, but the call fails when nothing decodes or when
 * more than half of the audio stream's packets fail. A demuxer error ends the
 * stream (a truncated file gives what it holds). Non-finite decoded samples
 * (or beyond 65536 in magnitude) are set to zero and count as failed packets. */
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>

/* Input rates a decoded frame may have; anything else is corrupt data. The
 * ceiling keeps libswresample from building enormous filters, the floor keeps
 * a tiny file that claims 1 Hz from expanding into gigabytes of output. */
#define SW_AUDIO_MIN_IN_RATE SW_AUDIO_MIN_RATE
#define SW_AUDIO_MAX_IN_RATE 1536000
/* Frames handed to swr_convert at a time by sw_audio_resample. */
#define SW_RESAMPLE_CHUNK 65536
/* Decoded samples beyond this magnitude (96 dB over full scale) can only be
 * corrupt float data; they are treated like NaN. */
#define SW_AUDIO_MAX_ABS 65536.0f
/* Decoder errors in a row that end one drain of the decoder. */
#define SW_MAX_ERRORS_IN_ROW 16

/* ---------------------------------------------------------------- logging */

static pthread_once_t quiet_once = PTHREAD_ONCE_INIT;

static void discard_log(void *avcl, int level, const char *fmt, va_list vl)
{
    (void)avcl;
    (void)level;
    (void)fmt;
    (void)vl;
}

static void quiet_ffmpeg(void)
{
    av_log_set_level(AV_LOG_QUIET);
    av_log_set_callback(discard_log);
}

static void av_message(int averr, char *buf, size_t size)
{
    if (av_strerror(averr, buf, size) < 0)
        snprintf(buf, size, "FFmpeg error %d", averr);
}

/* ------------------------------------------------------- growing output */

/* Samples decoded so far. With spill_after > 0, once more than spill_after
 * samples have come, they go to the file spill_fd instead, SW_SPILL_PIECE at
 * a time (`spilled` counts them), so a long recording never lies whole in
 * memory (sw_audio_decode_file_spill). */
typedef struct sample_buf {
    float *data;
    size_t len;
    size_t cap;
    int spill_fd;
    size_t spill_after;
    size_t spilled;
} sample_buf;

/* Samples written to the spill file at a time once spilling (4 MiB). */
#define SW_SPILL_PIECE ((size_t)1 << 20)

static sw_status too_long(sw_error *err, int rate)
{
    return sw_fail(err, SW_ERR_AUDIO,
                   "audio is longer than the limit of %zu samples (%.1f hours at %d Hz)",
                   SW_AUDIO_MAX_SAMPLES, (double)SW_AUDIO_MAX_SAMPLES / rate / 3600.0, rate);
}

/* Room for `extra` more samples; the total never passes SW_AUDIO_MAX_SAMPLES. */
static sw_status buf_reserve(sample_buf *b, size_t extra, int rate, sw_error *err)
{
    if (extra > SW_AUDIO_MAX_SAMPLES - b->spilled - b->len)
        return too_long(err, rate);
    size_t need = b->len + extra;
    if (need <= b->cap)
        return SW_OK;
    size_t cap = b->cap ? b->cap : 65536;
    while (cap < need)
        cap = cap > SW_AUDIO_MAX_SAMPLES / 2 ? SW_AUDIO_MAX_SAMPLES : cap * 2;
    float *p = realloc(b->data, cap * sizeof *p);
    if (!p)
        return sw_fail(err, SW_ERR_NOMEM, "out of memory for %zu decoded samples", cap);
    b->data = p;
    b->cap = cap;
    return SW_OK;
}

/* Writes the buffered samples to the spill file when spilling is on and
 * due (past spill_after at first, then every SW_SPILL_PIECE samples, and
 * the rest with `last` once spilling). After the first spill the buffer is given back, so
 * what stays allocated is a piece, not the spill_after samples. */
static sw_status buf_spill(sample_buf *b, int last, sw_error *err)
{
    if (b->spill_after == 0 || b->len == 0)
        return SW_OK;
    if (last ? b->spilled == 0 : b->len <= (b->spilled ? SW_SPILL_PIECE : b->spill_after))
        return SW_OK; /* a recording that never passed spill_after stays in memory */
    const char *p = (const char *)b->data;
    size_t left = b->len * sizeof *b->data;
    while (left > 0) {
        ssize_t n = write(b->spill_fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return sw_fail(err, SW_ERR_IO, "cannot write the decoded samples to disk: %s",
                           n < 0 ? strerror(errno) : "nothing written");
        p += n;
        left -= (size_t)n;
    }
    int first = b->spilled == 0;
    b->spilled += b->len;
    b->len = 0;
    if (first && b->cap > 2 * SW_SPILL_PIECE) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
    return SW_OK;
}

/* Hands the samples to the caller, trimmed to size. */
static void buf_release(sample_buf *b, float **out, size_t *n_out)
{
    if (b->len < b->cap) {
        float *p = realloc(b->data, b->len * sizeof *p);
        if (p)
            b->data = p;
    }
    *out = b->data;
    *n_out = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ------------------------------------------------ to mono at out_rate */

typedef struct converter {
    SwrContext *swr;
    enum AVSampleFormat in_fmt;
    int in_rate;
    int channels;
    int out_rate;
    float max_abs; /* output beyond this is zeroed and flagged */
    int nonfinite; /* set when converted output held NaN, Inf or > max_abs */
} converter;

static void conv_free(converter *c)
{
    swr_free(&c->swr);
}

static int conv_matches(const converter *c, enum AVSampleFormat fmt, int rate, int channels)
{
    return c->swr && c->in_fmt == fmt && c->in_rate == rate && c->channels == channels;
}

/* A resampler from `channels` channels of `fmt` at `in_rate` to mono float at
 * out_rate. The channels are averaged with an explicit matrix (so the layout's
 * meaning, LFE or not, never changes the weights). */
static sw_status conv_init(converter *c, enum AVSampleFormat fmt, int in_rate, int channels,
                           int out_rate, sw_error *err)
{
    conv_free(c);
    AVChannelLayout in_layout = {0};
    AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
    av_channel_layout_default(&in_layout, channels);
    int ret = swr_alloc_set_opts2(&c->swr, &mono, AV_SAMPLE_FMT_FLT, out_rate, &in_layout, fmt,
                                  in_rate, 0, NULL);
    av_channel_layout_uninit(&in_layout);
    if (ret >= 0 && channels > 1) {
        double matrix[SW_AUDIO_MAX_CHANNELS];
        for (int i = 0; i < channels; i++)
            matrix[i] = 1.0 / channels;
        ret = swr_set_matrix(c->swr, matrix, channels);
    }
    if (ret >= 0)
        ret = swr_init(c->swr);
    if (ret < 0) {
        char msg[128];
        av_message(ret, msg, sizeof msg);
        swr_free(&c->swr);
        if (ret == AVERROR(ENOMEM))
            return sw_fail(err, SW_ERR_NOMEM, "out of memory for the resampler");
        return sw_fail(err, SW_ERR_AUDIO, "cannot convert %d channels of %s at %d Hz: %s", channels,
                       av_get_sample_fmt_name(fmt) ? av_get_sample_fmt_name(fmt) : "?", in_rate,
                       msg);
    }
    c->in_fmt = fmt;
    c->in_rate = in_rate;
    c->channels = channels;
    c->out_rate = out_rate;
    c->max_abs = INFINITY;
    return SW_OK;
}

/* Converts n input frames (NULL, 0 flushes) and appends the output. */
static sw_status conv_run(converter *c, const uint8_t **in, int n, sample_buf *b, sw_error *err)
{
    for (;;) {
        int bound = swr_get_out_samples(c->swr, n);
        if (bound < 0)
            return sw_fail(err, SW_ERR_AUDIO, "resampler failed");
        sw_status st = buf_reserve(b, (size_t)bound + 1, c->out_rate, err);
        if (st != SW_OK)
            return st;
        uint8_t *dst[1] = {(uint8_t *)(b->data + b->len)};
        int got = swr_convert(c->swr, dst, bound + 1, in, n);
        if (got < 0)
            return sw_fail(err, SW_ERR_AUDIO, "resampler failed");
        float *p = b->data + b->len;
        for (int i = 0; i < got; i++) {
            if (!(fabsf(p[i]) <= c->max_abs)) { /* also catches NaN */
                p[i] = 0.0f;
                c->nonfinite = 1;
            }
        }
        b->len += (size_t)got;
        sw_status spilled = buf_spill(b, 0, err);
        if (spilled != SW_OK)
            return spilled;
        /* A flush may take more than one call; input is consumed in one. */
        if (n > 0 || got == 0)
            return SW_OK;
    }
}

/* ------------------------------------------------------------- decoding */

typedef struct decoder {
    AVIOContext *pb; /* ours: the format context is opened on it */
    AVFormatContext *fmt;
    AVCodecContext *ctx;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    int out_rate;
    converter conv;
    sample_buf buf;
    size_t packets;    /* packets of the audio stream given to the decoder */
    size_t failed;     /* of those, the ones that failed to decode */
    int last_error;    /* last FFmpeg error seen while decoding */
    char problem[160]; /* the last problem that was not an FFmpeg error */
} decoder;

static void decoder_free(decoder *d)
{
    conv_free(&d->conv);
    av_frame_free(&d->frame);
    av_packet_free(&d->pkt);
    avcodec_free_context(&d->ctx);
    avformat_close_input(&d->fmt);
    avio_closep(&d->pb);
    free(d->buf.data);
    d->buf.data = NULL;
}

static int is_io_error(int averr)
{
    return averr == AVERROR(EIO) || averr == AVERROR(EACCES) || averr == AVERROR(EPERM) ||
           averr == AVERROR(ENOENT) || averr == AVERROR(EISDIR) || averr == AVERROR(ENXIO) ||
           averr == AVERROR(ENODEV) || averr == AVERROR(ESTALE) || averr == AVERROR(ENOTDIR);
}

static sw_status check_file(const char *path, sw_error *err)
{
    char ebuf[128];
    struct stat sb;
    if (stat(path, &sb) != 0)
        return sw_fail(err, SW_ERR_IO, "%s", strerror_r(errno, ebuf, sizeof ebuf));
    if (S_ISDIR(sb.st_mode))
        return sw_fail(err, SW_ERR_IO, "%s", strerror_r(EISDIR, ebuf, sizeof ebuf));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return sw_fail(err, SW_ERR_IO, "%s", strerror_r(errno, ebuf, sizeof ebuf));
    close(fd);
    if (S_ISREG(sb.st_mode) && sb.st_size == 0)
        return sw_fail(err, SW_ERR_AUDIO, "empty file (0 bytes)");
    return SW_OK;
}

static sw_status open_input(decoder *d, const char *path, sw_error *err)
{
    /* "file:" keeps a name with a colon from being read as a protocol, and
     * the white list keeps playlists and the like off the network. */
    size_t n = strlen(path);
    char *url = malloc(n + 6);
    if (!url)
        return sw_fail(err, SW_ERR_NOMEM, "out of memory");
    memcpy(url, "file:", 5);
    memcpy(url + 5, path, n + 1);
    char msg[128];
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "protocol_whitelist", "file", 0);
    int ret = avio_open2(&d->pb, url, AVIO_FLAG_READ, NULL, &opts);
    av_dict_free(&opts);
    if (ret < 0) {
        free(url);
        av_message(ret, msg, sizeof msg);
        if (ret == AVERROR(ENOMEM))
            return sw_fail(err, SW_ERR_NOMEM, "out of memory");
        return sw_fail(err, SW_ERR_IO, "cannot open: %s", msg);
    }
    /* Probe first, so that "not audio at all" and "audio, but damaged" get
     * different messages. */
    const AVInputFormat *ifmt = NULL;
    ret = av_probe_input_buffer2(d->pb, &ifmt, url, NULL, 0, 0);
    if (ret < 0 || !ifmt) {
        free(url);
        if (d->pb->error < 0 && is_io_error(d->pb->error)) {
            av_message(d->pb->error, msg, sizeof msg);
            return sw_fail(err, SW_ERR_IO, "read error: %s", msg);
        }
        return sw_fail(err, SW_ERR_AUDIO, "not a recognised audio or video format");
    }
    d->fmt = avformat_alloc_context();
    if (!d->fmt) {
        free(url);
        return sw_fail(err, SW_ERR_NOMEM, "out of memory");
    }
    d->fmt->pb = d->pb;
    d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    av_dict_set(&opts, "protocol_whitelist", "file", 0);
    ret = avformat_open_input(&d->fmt, url, ifmt, &opts); /* frees fmt on failure */
    av_dict_free(&opts);
    free(url);
    if (ret < 0) {
        /* ENOMEM here too means the data: FFmpeg refuses the absurd sizes
         * that a damaged header asks for. */
        if (d->pb->error < 0 && is_io_error(d->pb->error)) {
            av_message(d->pb->error, msg, sizeof msg);
            return sw_fail(err, SW_ERR_IO, "read error: %s", msg);
        }
        /* The format's short name: "mov,mp4,m4a,..." gives "mov". */
        char name[32];
        snprintf(name, sizeof name, "%s", ifmt->name);
        name[strcspn(name, ",")] = '\0';
        av_message(ret, msg, sizeof msg);
        return sw_fail(err, SW_ERR_AUDIO, "corrupt or truncated %s data (%s)", name, msg);
    }
    /* A failure here leaves streams whose parameters the decoder may still
     * find in the data, so it is not fatal by itself. */
    (void)avformat_find_stream_info(d->fmt, NULL);

    const AVCodec *codec = NULL;
    ret = av_find_best_stream(d->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (ret == AVERROR_DECODER_NOT_FOUND) {
        enum AVCodecID id = AV_CODEC_ID_NONE;
        for (unsigned i = 0; i < d->fmt->nb_streams; i++) {
            if (d->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
                id = d->fmt->streams[i]->codecpar->codec_id;
                break;
            }
        }
        if (id == AV_CODEC_ID_NONE)
            return sw_fail(err, SW_ERR_AUDIO, "unknown audio codec (corrupt header?)");
        return sw_fail(err, SW_ERR_AUDIO, "no decoder for its audio codec (%s)",
                       avcodec_get_name(id));
    }
    if (ret < 0 || !codec)
        return sw_fail(err, SW_ERR_AUDIO, "no audio stream");
    d->stream = ret;
    for (unsigned i = 0; i < d->fmt->nb_streams; i++)
        if ((int)i != d->stream)
            d->fmt->streams[i]->discard = AVDISCARD_ALL;

    AVStream *st = d->fmt->streams[d->stream];
    d->ctx = avcodec_alloc_context3(codec);
    if (!d->ctx)
        return sw_fail(err, SW_ERR_NOMEM, "out of memory");
    ret = avcodec_parameters_to_context(d->ctx, st->codecpar);
    if (ret >= 0) {
        d->ctx->pkt_timebase = st->time_base;
        ret = avcodec_open2(d->ctx, codec, NULL);
    }
    if (ret < 0) {
        av_message(ret, msg, sizeof msg);
        return sw_fail(err, SW_ERR_AUDIO, "cannot decode its %s audio: %s", codec->name, msg);
    }
    d->pkt = av_packet_alloc();
    d->frame = av_frame_alloc();
    if (!d->pkt || !d->frame)
        return sw_fail(err, SW_ERR_NOMEM, "out of memory");
    return SW_OK;
}

/* Converts one decoded frame; *bad is set when the frame is unusable. */
static sw_status take_frame(decoder *d, AVFrame *f, int *bad, sw_error *err)
{
    int channels = f->ch_layout.nb_channels;
    enum AVSampleFormat fmt = (enum AVSampleFormat)f->format;
    if (f->nb_samples <= 0)
        return SW_OK;
    if (channels < 1 || channels > SW_AUDIO_MAX_CHANNELS) {
        snprintf(d->problem, sizeof d->problem, "unsupported number of channels (%d)", channels);
        *bad = 1;
        return SW_OK;
    }
    if (f->sample_rate < SW_AUDIO_MIN_IN_RATE || f->sample_rate > SW_AUDIO_MAX_IN_RATE) {
        snprintf(d->problem, sizeof d->problem, "unsupported sample rate (%d Hz)", f->sample_rate);
        *bad = 1;
        return SW_OK;
    }
    if (fmt <= AV_SAMPLE_FMT_NONE || fmt >= AV_SAMPLE_FMT_NB) {
        snprintf(d->problem, sizeof d->problem, "unsupported sample format");
        *bad = 1;
        return SW_OK;
    }
    if (!conv_matches(&d->conv, fmt, f->sample_rate, channels)) {
        /* The stream changed its format: finish the old resampler first. */
        if (d->conv.swr) {
            sw_status st = conv_run(&d->conv, NULL, 0, &d->buf, err);
            if (st != SW_OK)
                return st;
        }
        sw_status st = conv_init(&d->conv, fmt, f->sample_rate, channels, d->out_rate, err);
        if (st != SW_OK)
            return st;
        d->conv.max_abs = SW_AUDIO_MAX_ABS;
    }
    d->conv.nonfinite = 0;
    sw_status st =
        conv_run(&d->conv, (const uint8_t **)f->extended_data, f->nb_samples, &d->buf, err);
    if (d->conv.nonfinite) {
        snprintf(d->problem, sizeof d->problem, "samples that are not finite or far out of range");
        *bad = 1;
    }
    return st;
}

/* Takes every frame the decoder has ready. */
static sw_status drain(decoder *d, int *bad, sw_error *err)
{
    int errors = 0;
    for (;;) {
        int ret = avcodec_receive_frame(d->ctx, d->frame);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
            return SW_OK;
        if (ret < 0) {
            d->last_error = ret;
            *bad = 1;
            if (++errors >= SW_MAX_ERRORS_IN_ROW)
                return SW_OK;
            continue;
        }
        errors = 0;
        sw_status st = take_frame(d, d->frame, bad, err);
        av_frame_unref(d->frame);
        if (st != SW_OK)
            return st;
    }
}

/* Sends one packet (NULL: end of stream) and takes what it decodes to. */
static sw_status feed(decoder *d, const AVPacket *pkt, sw_error *err)
{
    int bad = 0;
    sw_status st = SW_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        int ret = avcodec_send_packet(d->ctx, pkt);
        if (ret == AVERROR(EAGAIN)) {
            /* Frames still waiting: take them, then send again. */
            st = drain(d, &bad, err);
            if (st != SW_OK)
                return st;
            continue;
        }
        /* Errors, ENOMEM included (a damaged packet can ask for absurd
         * sizes), fail this packet only. */
        if (ret < 0 && ret != AVERROR_EOF) {
            d->last_error = ret;
            bad = 1;
        }
        break;
    }
    st = drain(d, &bad, err);
    if (pkt && bad)
        d->failed++;
    return st;
}

static sw_status decode_all(decoder *d, sw_error *err)
{
    sw_status st = SW_OK;
    int read_error = 0;
    for (;;) {
        int ret = av_read_frame(d->fmt, d->pkt);
        if (ret < 0) {
            /* The file system failed (not the data). */
            if (d->pb->error < 0 && is_io_error(d->pb->error)) {
                char msg[128];
                av_message(d->pb->error, msg, sizeof msg);
                return sw_fail(err, SW_ERR_IO, "read error: %s", msg);
            }
            /* End of file, or data the demuxer cannot go past (a truncated
             * or damaged file): decode what came before. */
            if (ret != AVERROR_EOF)
                read_error = ret;
            break;
        }
        if (d->pkt->stream_index == d->stream) {
            d->packets++;
            st = feed(d, d->pkt, err);
        }
        av_packet_unref(d->pkt);
        if (st != SW_OK)
            return st;
    }
    st = feed(d, NULL, err);
    if (st == SW_OK && d->conv.swr)
        st = conv_run(&d->conv, NULL, 0, &d->buf, err);
    if (st == SW_OK)
        st = buf_spill(&d->buf, 1, err);
    if (st != SW_OK)
        return st;

    if (d->buf.len == 0 && d->buf.spilled == 0) {
        char msg[128];
        if (d->problem[0])
            return sw_fail(err, SW_ERR_AUDIO, "corrupt data: %s", d->problem);
        int cause = d->last_error ? d->last_error : read_error;
        if (cause) {
            av_message(cause, msg, sizeof msg);
            return sw_fail(err, SW_ERR_AUDIO, "corrupt data, nothing could be decoded (%s)", msg);
        }
        return sw_fail(err, SW_ERR_AUDIO, "decodes to no samples");
    }
    if (d->failed * 2 > d->packets)
        return sw_fail(err, SW_ERR_AUDIO,
                       "corrupt data: %zu of %zu audio packets could not be decoded", d->failed,
                       d->packets);
    return SW_OK;
}

static sw_status check_rate(const char *what, int rate, sw_error *err)
{
    if (rate < SW_AUDIO_MIN_RATE || rate > SW_AUDIO_MAX_RATE)
        return sw_fail(err, SW_ERR_ARG, "%s must be between %d and %d Hz, got %d", what,
                       SW_AUDIO_MIN_RATE, SW_AUDIO_MAX_RATE, rate);
    return SW_OK;
}

sw_status sw_audio_decode_file(const char *path, int sample_rate, float **out, size_t *n_out,
                               sw_error *err)
{
    return sw_audio_decode_file_spill(path, sample_rate, -1, 0, out, n_out, err);
}

sw_status sw_audio_decode_file_spill(const char *path, int sample_rate, int spill_fd,
                                     size_t spill_after, float **out, size_t *n_out, sw_error *err)
{
    if (out)
        *out = NULL;
    if (n_out)
        *n_out = 0;
    if (!path || !out || !n_out)
        return sw_fail(err, SW_ERR_ARG, "sw_audio_decode_file: NULL argument");
    if (spill_after > 0 && spill_fd < 0)
        return sw_fail(err, SW_ERR_ARG, "sw_audio_decode_file_spill: no file to spill to");
    sw_status st = check_rate("sample_rate", sample_rate, err);
    if (st != SW_OK)
        return st;
    pthread_once(&quiet_once, quiet_ffmpeg);
    st = check_file(path, err);
    if (st != SW_OK)
        return st;

    decoder d;
    memset(&d, 0, sizeof d);
    d.out_rate = sample_rate;
    d.buf.spill_fd = spill_fd;
    d.buf.spill_after = spill_after;
    st = open_input(&d, path, err);
    if (st == SW_OK)
        st = decode_all(&d, err);
    if (st == SW_OK && d.buf.spilled)
        *n_out = d.buf.spilled; /* all of them in the file */
    else if (st == SW_OK)
        buf_release(&d.buf, out, n_out);
    decoder_free(&d);
    return st;
}

/* ------------------------------------------------------------ resample */

sw_status sw_audio_resample(const float *in, size_t frames, int channels, int in_rate, int out_rate,
                            float **out, size_t *n_out, sw_error *err)
{
    if (out)
        *out = NULL;
    if (n_out)
        *n_out = 0;
    if (!out || !n_out || (!in && frames > 0))
        return sw_fail(err, SW_ERR_ARG, "sw_audio_resample: NULL argument");
    if (channels < 1 || channels > SW_AUDIO_MAX_CHANNELS)
        return sw_fail(err, SW_ERR_ARG, "channels must be between 1 and %d, got %d",
                       SW_AUDIO_MAX_CHANNELS, channels);
    sw_status st = check_rate("in_rate", in_rate, err);
    if (st == SW_OK)
        st = check_rate("out_rate", out_rate, err);
    if (st != SW_OK)
        return st;
    if (frames == 0)
        return sw_fail(err, SW_ERR_AUDIO, "no samples (empty audio)");
    if (frames > SIZE_MAX / sizeof(float) / (size_t)channels)
        return sw_fail(err, SW_ERR_ARG, "too many frames (%zu)", frames);
    if ((double)frames * out_rate / in_rate > (double)SW_AUDIO_MAX_SAMPLES)
        return too_long(err, out_rate);
    size_t total = frames * (size_t)channels;
    for (size_t i = 0; i < total; i++) {
        if (!isfinite(in[i]))
            return sw_fail(err, SW_ERR_AUDIO, "sample %zu of channel %d is not finite (%g)",
                           i / (size_t)channels, (int)(i % (size_t)channels), (double)in[i]);
    }

    converter conv;
    memset(&conv, 0, sizeof conv);
    sample_buf buf = {0};
    st = conv_init(&conv, AV_SAMPLE_FMT_FLT, in_rate, channels, out_rate, err);
    for (size_t done = 0; st == SW_OK && done < frames;) {
        size_t n = frames - done < SW_RESAMPLE_CHUNK ? frames - done : SW_RESAMPLE_CHUNK;
        const uint8_t *src[1] = {(const uint8_t *)(in + done * (size_t)channels)};
        st = conv_run(&conv, src, (int)n, &buf, err);
        done += n;
    }
    if (st == SW_OK)
        st = conv_run(&conv, NULL, 0, &buf, err);
    if (st == SW_OK && conv.nonfinite)
        st = sw_fail(err, SW_ERR_AUDIO, "resampled audio is not finite (samples too large)");
    if (st == SW_OK && buf.len == 0)
        st = sw_fail(err, SW_ERR_AUDIO, "resamples to no samples (too short for the rate)");
    if (st == SW_OK)
        buf_release(&buf, out, n_out);
    free(buf.data);
    conv_free(&conv);
    return st;
}
