#!/usr/bin/env bash
# Builds and installs the saywho wheel into this Python (C core, extension,
# and the CUDA backend when nvcc is present). Arguments go to pip: CI passes
# `-C build-dir=build/c` so the package reuses the objects its C stage built
# (scripts/test.sh says why).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore \
  --no-build-isolation "$@" .
