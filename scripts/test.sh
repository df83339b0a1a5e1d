#!/usr/bin/env bash
# The second README command: every test, C and Python.
#   1. lint (clang-format, cppcheck, ruff)
#   2. the C core and the CUDA backend build with -Werror; C tests under ctest
#   3. the C tests again under AddressSanitizer and UndefinedBehaviorSanitizer
#   4. the wheel is built and installed, then pytest
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs=$(nproc)

bash scripts/lint.sh

echo "== C build and tests"
cmake -S . -B build/c -G Ninja -DSAYWHO_TESTS=ON -DSAYWHO_PYTHON=OFF >/dev/null
cmake --build build/c -j "$jobs"
ctest --test-dir build/c --output-on-failure -j "$jobs"

echo "== C tests under ASan + UBSan"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSAYWHO_TESTS=ON -DSAYWHO_PYTHON=OFF \
  -DSAYWHO_CUDA=OFF -DSAYWHO_SANITIZE=ON >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== Python package and tests"
bash scripts/build.sh
python3 -m pytest -q tests "$@"
