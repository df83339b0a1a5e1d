#!/usr/bin/env bash
# Runs inside the bullseye builder root (build_wheel.sh chroots into it, once
# per version of this file and its inputs).
# /opt/ffmpeg: FFmpeg 8.1 (the release PyAV's wheels carry), static, every audio
# decoder and demuxer, no external library. It is linked into the extension,
# so the wheel carries no FFmpeg .so and none of the ~80 codec libraries
# Debian's FFmpeg pulls in (X11, VA-API, ...).
set -euo pipefail
jobs=$(nproc)
rm -rf /opt/ffmpeg /tmp/ffmpeg-src && mkdir -p /tmp/ffmpeg-src
tar -xJf /opt/src/ffmpeg.tar.xz -C /tmp/ffmpeg-src --strip-components=1
cd /tmp/ffmpeg-src
# every audio decoder FFmpeg has: the sections of allcodecs.c from "audio
# codecs" up to "subtitles" (audio, PCM, DPCM, ADPCM)
audio=$(sed -n '/^\/\* audio codecs \*\//,/^\/\* subtitles \*\//p' libavcodec/allcodecs.c |
  grep -o 'ff_[a-z0-9_]*_decoder' | sed 's/^ff_//; s/_decoder$//' | paste -sd, -)
./configure --prefix=/opt/ffmpeg --enable-static --disable-shared --enable-pic \
  --disable-autodetect --disable-programs --disable-doc --disable-network --disable-debug \
  --disable-avdevice --disable-swscale --disable-avfilter \
  --disable-encoders --disable-muxers --disable-hwaccels --disable-indevs --disable-outdevs \
  --disable-protocols --enable-protocol=file,pipe \
  --disable-decoders --enable-decoder="$audio" >/tmp/ffmpeg-configure.log
make -s -j"$jobs" >/dev/null
make -s install >/dev/null
cd / && rm -rf /tmp/ffmpeg-src
