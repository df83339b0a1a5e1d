#!/usr/bin/env bash
# Builds whisper.cpp's command-line tool from its public source, for the
# transcription bench's whisper.cpp column (bench/bench_transcribe.py
# --whispercpp). The source comes from PyPI: pywhispercpp's sdist vendors
# whisper.cpp (pinned version and hash below). Everything lands in the
# ignored .cache/whispercpp/; nothing of it is committed. CPU only, Release,
# tuned for this machine (GGML_NATIVE).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.5.1
URL=https://files.pythonhosted.org/packages/9f/35/610787a277e177e6b7983277a35a2969c0876b46c0d889bc6a0c4b4ac4a7/pywhispercpp-$VERSION.tar.gz
SHA256=5df897e5dd9d9f16804fc937bd85b9f5880a0b29a55f8843585e0e03d76195e5
DIR=.cache/whispercpp
mkdir -p "$DIR"
if [ ! -f "$DIR/pywhispercpp-$VERSION.tar.gz" ]; then
  curl -sSLo "$DIR/pywhispercpp-$VERSION.tar.gz.partial" "$URL"
  mv "$DIR/pywhispercpp-$VERSION.tar.gz.partial" "$DIR/pywhispercpp-$VERSION.tar.gz"
fi
echo "$SHA256  $DIR/pywhispercpp-$VERSION.tar.gz" | sha256sum -c --quiet
[ -d "$DIR/pywhispercpp-$VERSION" ] || tar xzf "$DIR/pywhispercpp-$VERSION.tar.gz" -C "$DIR"
SRC="$DIR/pywhispercpp-$VERSION/whisper.cpp"
cmake -S "$SRC" -B "$SRC/build" -DCMAKE_BUILD_TYPE=Release -DWHISPER_BUILD_TESTS=OFF \
  -DWHISPER_SDL2=OFF -DGGML_NATIVE=ON >/dev/null
# whisper-quantize makes the q8_0 file of the int8 rows
cmake --build "$SRC/build" -j"$(nproc)" --target whisper-cli whisper-quantize >/dev/null
echo "$SRC/build/bin/whisper-cli"
