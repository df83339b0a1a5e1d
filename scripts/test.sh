#!/usr/bin/env bash
# The second README command: every test, C and Python.
#   1. lint (clang-format, cppcheck, ruff)
#   2. the C core and the CUDA backend build with -Werror; C tests under ctest
#   3. the C tests again under AddressSanitizer and UndefinedBehaviorSanitizer
#   4. the portable manylinux wheel (wheels/build_wheel.sh, cached by input
#      hash); tests/test_wheel.py checks it
#   5. the wheel is built and installed, then pytest
#   6. the Whisper goldens again with saywho's kernels forced to the x86-64
#      baseline (no AVX, FMA, AVX-512 or VNNI) and OpenBLAS to its Nehalem
#      kernels: what a CPU without AVX-512 or AVX2 runs
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

echo "== Portable wheel (cached by input hash; tests/test_wheel.py checks it)"
bash wheels/build_wheel.sh

echo "== Python package and tests"
bash scripts/build.sh
python3 -m pytest -q tests "$@"

echo "== Whisper goldens at the portable baseline (SAYWHO_CPU_DISPATCH=baseline, OPENBLAS_CORETYPE=Nehalem)"
SAYWHO_CPU_DISPATCH=baseline OPENBLAS_CORETYPE=Nehalem python3 -m pytest -q tests/test_cpu_dispatch.py \
  tests/test_transcribe.py tests/test_word_timestamps.py tests/test_int8.py \
  tests/test_batched.py
