#!/usr/bin/env bash
# The second README command: every test, C and Python.
#   1. lint (clang-format, cppcheck, ruff)
#   2. the C core and the CUDA backend build with -Werror; C tests under ctest
#      (the CUDA kernels' op tests on the emulator also in reverse thread order)
#   3. the C tests again under AddressSanitizer and UndefinedBehaviorSanitizer,
#      with the CUDA kernels' op tests on the emulator
#   4. the portable manylinux wheel (wheels/build_wheel.sh, cached by input
#      hash); tests/test_wheel.py checks it
#   5. the package is installed from step 2's build folder, then pytest (the
#      GPU goldens run on the emulator: device="cuda-emulated",
#      docs/cuda_emulator.md)
#   6. the CPU-dependent tests (tiles, bfloat16, int8, the Whisper goldens)
#      again with saywho's kernels and OpenBLAS's forced to AVX2 (x86-64-v3,
#      Haswell) and to the x86-64 baseline (Nehalem): what an AVX2-only CPU
#      and one without AVX run, shown on any box
#   7. the Python op tests, the VAD's probabilities and the models' copy
#      tests on the ASan build of the emulator, and scripts/gpu_check.sh's
#      dry run (its pytest steps listed, not run again: step 5 ran them)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
jobs=$(nproc)

bash scripts/lint.sh

echo "== C build and tests"
cmake -S . -B build/c -G Ninja -DSAYWHO_TESTS=ON -DSAYWHO_PYTHON=OFF >/dev/null
cmake --build build/c -j "$jobs"
ctest --test-dir build/c --output-on-failure -j "$jobs"
# threads in reverse order between barriers: a missing __syncthreads shows
# in the results, which needs no sanitizer (on the ASan build the Whisper
# ops' test alone took 123 s of the last CI run; plainly, 4.4)
SAYWHO_CUDA_EMU_REVERSE=1 ctest --test-dir build/c --output-on-failure -j "$jobs" -R emulated

echo "== C tests under ASan + UBSan"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSAYWHO_TESTS=ON -DSAYWHO_PYTHON=OFF \
  -DSAYWHO_CUDA=OFF -DSAYWHO_SANITIZE=ON >/dev/null
cmake --build build/asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs"

echo "== Portable wheel (cached by input hash; tests/test_wheel.py checks it)"
bash wheels/build_wheel.sh

echo "== Python package and tests"
# from build/c, the C stage's folder: scikit-build-core configures it again
# with the extension on (the same compilers and flags), so ninja compiles
# only the extension and links; its own folder (build/py) would compile the
# core, the CUDA backend and the emulator a second time (119 compile jobs,
# 13 of them nvcc's: the largest part of that build's time). The tests that
# build a wheel of the checkout (the Dockerfile's step, the notebook's)
# take the same folder and options from SAYWHO_TEST_BUILD_ARGS
# (tests/package_build.py), so theirs is no second full build either
build_args="-C build-dir=build/c -C cmake.define.SAYWHO_TESTS=ON"
bash scripts/build.sh $build_args
SAYWHO_TEST_BUILD_ARGS="$build_args" python3 -m pytest -q tests "$@"

# The CPU-dependent tests (tiles, bfloat16, int8, the Whisper goldens) again
# at the levels below this CPU's, saywho's kernels and OpenBLAS's forced
# together, so a failure of an AVX2-only or SSE-only CPU shows on any box:
#   avx2      x86-64-v3 (AVX2 + FMA, no AVX-512), OpenBLAS's Haswell kernels
#   baseline  x86-64 (no AVX, FMA, AVX-512 or VNNI), OpenBLAS's Nehalem kernels
# (not the emulated GPU cases: the CPU's dispatch does not reach the GPU code)
hardware=$(python3 -c 'from saywho import _core; print(_core.cpu_dispatch()["hardware"])')
for level in avx2:Haswell baseline:Nehalem; do
  dispatch=${level%%:*} coretype=${level##*:}
  if [[ $dispatch == avx2 && $hardware == x86-64 ]]; then
    echo "== the $dispatch level: not forced, this CPU has no AVX2 ($hardware)"
    continue
  fi
  if [[ $dispatch == avx2 && $hardware == x86-64-v3 ]]; then
    echo "== the $dispatch level: the tests above ran at it already (this CPU is $hardware)"
    continue
  fi
  # the baseline level leaves out the 2-minute recordings' goldens (every
  # decoding path keeps its jfk golden there): a CPU without AVX is rare and
  # its scalar kernels take minutes on them, which an AVX-512 box pays twice
  selection="not cuda-emulated"
  [[ $dispatch == baseline ]] && selection="not cuda-emulated and not long2"
  # tests whose transcripts run in children that set the level themselves
  # (the AMX tiles at auto, bfloat16 at each level, int8 at two levels):
  # from AVX2 up the level also sets saywho's OpenBLAS kernels whatever
  # OPENBLAS_CORETYPE says (blas_kernels.py), so the children run what they
  # ran in the pass above, bit for bit; a CPU without AVX2 leaves auto's
  # kernels to OpenBLAS's detection, which the variable moves: run them there
  if [[ $hardware != x86-64 ]]; then
    selection+=" and not emulated_tiles_give_the_int8_transcript and not emulated_amx_bf16_tiles"
    selection+=" and not words_at_each_vector_level and not int8_levels_agree_to_the_bit"
  fi
  echo "== the CPU-dependent tests at the $dispatch level (SAYWHO_CPU_DISPATCH=$dispatch, OPENBLAS_CORETYPE=$coretype)"
  SAYWHO_CPU_DISPATCH=$dispatch OPENBLAS_CORETYPE=$coretype python3 -m pytest -q -p no:cacheprovider \
    tests/test_cpu_dispatch.py tests/test_amx.py tests/test_bfloat16_cpu.py \
    tests/test_transcribe.py tests/test_word_timestamps.py tests/test_int8.py \
    tests/test_batched.py -k "$selection"
done

echo "== the CUDA kernels under ASan from Python: op tests, VAD probabilities and silence, the embeddings' and VAD's forwards (their copies)"
# the ASan build of libsaywho_cuda_emu.so in an uninstrumented Python: the
# ASan runtime must be loaded first; Python's own leaks are not ours to list.
# The VAD's speech timestamps are left to step 5's run: they run the very
# launches of the probabilities (the 2-minute recording) and the silence
# (the short last batch), SAYWHO_CUDA_EMU_COVERAGE's lists show, and add
# Python's thresholds only
LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  SAYWHO_CUDA_EMULATOR_LIBRARY="$PWD/build/asan/cuda/emu/libsaywho_cuda_emu.so" \
  python3 -m pytest -q -p no:cacheprovider tests/test_backend_ops.py tests/test_vad.py \
  tests/test_gpu_self_check.py tests/test_device_copies.py \
  -k "(emulated and not speech_timestamps) or self_check or forward_copies"

echo "== scripts/gpu_check.sh dry run (the emulator)"
bash scripts/gpu_check.sh --emulated --collect-only
