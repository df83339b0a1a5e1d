#!/usr/bin/env bash
# Puts what a lent GPU machine needs beyond the tracked tree into .gpu/ (an
# ignored folder the device tool carries: `carry: [".gpu"]`), and checks that
# tree and folder together fit the 64 MiB that travel in one call:
#
#   .gpu/wheel/saywho-*.whl      the portable wheel (FFmpeg and OpenBLAS inside;
#                                the GPU image has neither), from dist/ or $SAYWHO_WHEEL
#   .gpu/test-weights/whisper-base/{tokenizer.json,config.json,vocabulary.txt}
#                                the tokenizer the random-weight shapes are made with
#   .gpu/test-weights/pyannote-segmentation-3.0, resemblyzer-ge2e
#                                the diarization row's models and the GE2E goldens
#
# Whisper's real test weights do not fit (tiny.en's model.bin alone is 75 MB):
# there, the Whisper rows run on random-weight checkpoints of the real shapes
# made on the machine (bench/make_shape_checkpoint.py), and the Whisper
# goldens stay with the emulator (CI).
#
#   bash wheels/build_wheel.sh && bash scripts/gpu_carry.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LIMIT=$((64 * 1024 * 1024))
weights=${SAYWHO_TEST_WEIGHTS:-.cache/test-weights}
wheel=${SAYWHO_WHEEL:-$(ls -t dist/saywho-*-manylinux_*.whl 2>/dev/null | head -1 || true)}
if [[ -z $wheel || ! -f $wheel ]]; then
  echo "gpu_carry: no portable wheel in dist/ (bash wheels/build_wheel.sh makes it, or set SAYWHO_WHEEL)" >&2
  exit 1
fi
rm -rf .gpu
mkdir -p .gpu/wheel .gpu/test-weights/whisper-base
cp "$wheel" .gpu/wheel/
for f in tokenizer.json config.json vocabulary.txt; do
  cp "$weights/whisper-base/$f" .gpu/test-weights/whisper-base/
done
for d in pyannote-segmentation-3.0 resemblyzer-ge2e; do
  cp -r "$weights/$d" .gpu/test-weights/
done
# what travels: tracked files, untracked files git does not ignore, and .gpu/
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
fits() {
  local carry
  carry=$(du -sb .gpu | cut -f1)
  echo "gpu_carry: tree $((tree / 1048576)) MiB + .gpu $((carry / 1048576)) MiB = $(((tree + carry) / 1048576)) MiB of 64"
  ((tree + carry <= LIMIT))
}
if ! fits; then
  # the GE2E encoder (17 MB) goes first: the diarization row then fails naming it
  echo "gpu_carry: over the 64 MiB a call carries: leaving out resemblyzer-ge2e (the diarization row will say so)"
  rm -rf .gpu/test-weights/resemblyzer-ge2e
  fits || {
    echo "gpu_carry: still over 64 MiB: the wheel is too large to travel" >&2
    exit 1
  }
fi
