#!/usr/bin/env bash
# The first README command: install everything, build, run the main job on
# the bundled sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
# Whisper tiny.en from the test weights, so this step needs no Hugging Face
# hub; without --model saywho takes a real model by name (README, "Use").
model="$PWD/.cache/test-weights/whisper-tiny.en"
cd /tmp && python3 -m saywho --verbose --model "$model"
