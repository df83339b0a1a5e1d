#!/usr/bin/env bash
# The first README command: install everything, build, run the main job on
# the bundled sample.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
export SAYWHO_TEST_WEIGHTS="$PWD/.cache/test-weights"
cd /tmp && python3 -m saywho --verbose
