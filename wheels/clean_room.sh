#!/usr/bin/env bash
# The wheel on a machine that has nothing: a minimal Debian root (debootstrap
# minbase, python3 and python3-venv, no FFmpeg, no BLAS, no compiler), where
# the wheel and NumPy are pip-installed into a fresh venv and `python -m
# saywho` transcribes and diarizes the bundled sample.
#   bash wheels/clean_room.sh SUITE WHEEL WEIGHTS
# SUITE: bullseye (glibc 2.31, Python 3.9) or bookworm (glibc 2.36, Python
# 3.11); WEIGHTS: the test weights folder (scripts/fetch_test_weights.sh),
# bound read-only into the root because a fresh install has no model.
# Prints what saywho printed; exits non-zero when anything failed. As root.
set -euo pipefail
cd "$(dirname "$0")/.."
source wheels/roots.sh
suite=$1 wheel=$(realpath "$2") weights=$(realpath "$3")
mkdir -p "$SAYWHO_WHEEL_CACHE"
exec 9>"$SAYWHO_WHEEL_CACHE/clean-room-$suite.lock"
flock 9
root=$(sw_root cleanroom "$suite" python3,python3-venv)

# what the room must not have, so that the wheel is what provides it
for lib in libavcodec libavformat libswresample libopenblas libblas libcudart libcublas; do
  if find "$root/usr/lib" "$root/lib" -name "$lib*.so*" 2>/dev/null | grep -q .; then
    echo "clean_room: $root has $lib: not a clean room" >&2
    exit 1
  fi
done
for tool in gcc cc ffmpeg; do
  if [[ -e $root/usr/bin/$tool ]]; then
    echo "clean_room: $root has $tool: not a clean room" >&2
    exit 1
  fi
done

rm -rf "$root/opt/saywho" "$root/opt/weights" && mkdir -p "$root/opt/saywho/wheel" "$root/opt/weights"
cp "$wheel" "$root/opt/saywho/wheel/"
mount --bind -o ro "$weights" "$root/opt/weights"
trap 'umount "$root/opt/weights"' EXIT
# NumPy comes from PyPI; pip's cache stays in the root, so a second run is
# offline for it
sw_chroot "$root" /bin/sh -c '
  set -e
  python3 -m venv /opt/saywho/venv
  /opt/saywho/venv/bin/pip install -q --disable-pip-version-check /opt/saywho/wheel/*.whl
  cd /tmp
  /opt/saywho/venv/bin/python -m saywho --quiet --device cpu \
    --model /opt/weights/whisper-tiny.en
'
