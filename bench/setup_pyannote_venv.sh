#!/usr/bin/env bash
# A separate venv for bench/bench_pyannote_peer.py: torch (CPU) and
# pyannote.audio 3.3.2 from PyPI. Never a saywho dependency: saywho's own
# venvs and tests must not see torch, so this venv is not made with
# --system-site-packages and saywho is not installed into it.
#
#   bash bench/setup_pyannote_venv.sh            # prints the venv's python
#   TORCH_VENV=/work/venv-torch bash bench/setup_pyannote_venv.sh
#
# Cached in .cache/bench-venvs/ (ignored), keyed by the pinned versions:
# a second run only prints the path.
#
# CAM++'s model class is 3D-Speaker's own (speakerlab/models/campplus,
# Apache-2.0), taken at a pinned commit from a git copy of
# github.com/modelscope/3D-Speaker (THREED_SPEAKER_GIT, a clone or bare
# mirror) into the venv's site-packages; bench/pyannote_peer_run.py wraps it
# as a pyannote.audio Model.
#
# Why pyannote.audio 3.3.2: the last 3.x release, the line whose
# SpeakerDiarization is "speaker-diarization-3.1"'s algorithm (segmentation
# powerset -> embeddings of (chunk, local speaker) -> centroid AHC), it takes
# a Model instance as its embedding, loads segmentation-3.0's
# pytorch_model.bin from a local path, and runs on torch 2.5.1 (pyannote.audio
# 4 needs torch >= 2.8 and torchcodec).
#
# torch: TORCH_VENV names an existing venv that holds torch==2.5.1 and
# torchaudio==2.5.1 (e.g. the one bench/make_campp_golden.py uses); its
# site-packages is appended to this venv's path with a .pth file, so the
# multi-GB torch install is not repeated. Without it, torch 2.5.1 comes from
# PyTorch's CPU index when that is reachable, else from PyPI (whose build runs
# on the CPU too, but brings the CUDA libraries along).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYANNOTE_VERSION=3.3.2
TORCH_VERSION=2.5.1
PYTHON="${PYTHON:-python3}"
THREED_SPEAKER_COMMIT=09e7806729ed412d3f216316a552a30c8e9e37fa
THREED_SPEAKER_GIT="${THREED_SPEAKER_GIT:-/work/.mirror/modelscope+3D-Speaker/repo}"
VENV="$REPO/.cache/bench-venvs/pyannote-audio-$PYANNOTE_VERSION-torch-$TORCH_VERSION"
STAMP="$VENV/.complete"

if [[ -f "$STAMP" ]]; then
  echo "$VENV/bin/python"
  exit 0
fi
if ! git --git-dir="$THREED_SPEAKER_GIT" cat-file -e "$THREED_SPEAKER_COMMIT^{commit}" 2>/dev/null \
   && ! git -C "$THREED_SPEAKER_GIT" cat-file -e "$THREED_SPEAKER_COMMIT^{commit}" 2>/dev/null; then
  echo "THREED_SPEAKER_GIT=$THREED_SPEAKER_GIT: not a git copy of 3D-Speaker holding" \
    "$THREED_SPEAKER_COMMIT (git clone https://github.com/modelscope/3D-Speaker)" >&2
  exit 1
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install -q --disable-pip-version-check)

site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if [[ -n "${TORCH_VENV:-}" ]]; then
  tsite="$("$TORCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  have="$("$TORCH_VENV/bin/python" -c 'import torch, torchaudio; print(torch.__version__.split("+")[0], torchaudio.__version__.split("+")[0])')"
  if [[ "$have" != "$TORCH_VERSION $TORCH_VERSION" ]]; then
    echo "TORCH_VENV=$TORCH_VENV has torch/torchaudio $have, not $TORCH_VERSION" >&2
    exit 1
  fi
  echo "$tsite" > "$site/zz_torch_from_venv.pth"
elif "${PIP[@]}" --index-url https://download.pytorch.org/whl/cpu \
    "torch==$TORCH_VERSION" "torchaudio==$TORCH_VERSION" 2>/dev/null; then
  :
else
  "${PIP[@]}" "torch==$TORCH_VERSION" "torchaudio==$TORCH_VERSION"
fi

# pyannote.audio and its dependencies from PyPI (torch pinned so that pip
# keeps the one above); matplotlib: pyannote.audio 3.3.2 imports it (tasks/
# segmentation/mixins.py) without declaring it. onnx: torch's exporter needs it
# to write CAM++'s graph for onnxruntime (bench_campp.py).
"${PIP[@]}" "pyannote.audio==$PYANNOTE_VERSION" matplotlib "torch==$TORCH_VERSION" \
  "torchaudio==$TORCH_VERSION" onnx==1.17.0
"$VENV/bin/python" -c "import pyannote.audio, torch; print('pyannote.audio', pyannote.audio.__version__, 'torch', torch.__version__)" >&2
# 3D-Speaker's CAM++ class: namespace packages (no __init__.py), torch only
if git --git-dir="$THREED_SPEAKER_GIT" cat-file -e "$THREED_SPEAKER_COMMIT^{commit}" 2>/dev/null; then
  git --git-dir="$THREED_SPEAKER_GIT" archive "$THREED_SPEAKER_COMMIT" speakerlab/models/campplus
else
  git -C "$THREED_SPEAKER_GIT" archive "$THREED_SPEAKER_COMMIT" speakerlab/models/campplus
fi | tar -x -C "$site"
"$VENV/bin/python" -c "from speakerlab.models.campplus.DTDNN import CAMPPlus"
touch "$STAMP"
echo "$VENV/bin/python"
