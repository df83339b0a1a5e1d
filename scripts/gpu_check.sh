#!/usr/bin/env bash
# The first machine with a GPU runs this, one command (issue 13):
#   1. the device opens and passes saywho's self-check (every kernel against the CPU)
#   2. the op-parity tests on the device
#   3. the model goldens on the device (Whisper tokens, word timestamps, VAD, diarization,
#      the three speaker embeddings against the CPU)
#   4. the memory test: close() gives every device byte back
#   5. the speed rows against the peers (bench/bench_gpu.py: a random-weight
#      checkpoint of --model's shape, made on the machine; scripts/gpu_measure.sh
#      runs the full set of shapes and modes instead, with --no-speed here)
#
#   bash scripts/gpu_check.sh [--model large-v3-turbo-shape] [--no-speed]   # on a GPU
#   bash scripts/gpu_check.sh --emulated                                     # the dry run
#   bash scripts/gpu_check.sh --emulated --collect-only                      # CI's dry run
#
# --collect-only: steps 2 and 3 list their tests (pytest --collect-only, which
# fails if the selection names none) instead of running them: CI's pytest
# pass (scripts/test.sh) has just run those very cases on the same library.
#
# Without a GPU (nvidia-smi finds none), or with --emulated, it is a dry run on
# the CPU emulator of the CUDA kernels (device="cuda-emulated"): the same
# steps, on tiny.en and 11 s of speech (the speed step on the tiny test shape
# and one 30 s window), with the goldens that pytest already runs on the
# emulator left to pytest.
#
# Every step runs even when one before it failed (a device lease is short and
# one run must tell as much as it can); the summary at the end names each
# step's outcome and the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=gpu model=large-v3-turbo-shape speed=1 collect=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --emulated) mode=emulated ;;
    --collect-only) collect=(--collect-only) ;;
    --model) model=$2; shift ;;
    --no-speed) speed=0 ;;
    *) echo "usage: $0 [--emulated] [--collect-only] [--model NAME-shape|DIR] [--no-speed]" >&2; exit 2 ;;
  esac
  shift
done
if [[ $mode == gpu ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no GPU answers nvidia-smi here; running the dry run on the emulator"
  mode=emulated
fi
# the test weights of this checkout (scripts/fetch_test_weights.sh), as in tests/conftest.py
export SAYWHO_TEST_WEIGHTS="${SAYWHO_TEST_WEIGHTS:-$PWD/.cache/test-weights}"
python3 -c "import saywho" 2>/dev/null || { echo "gpu_check: install saywho first (bash scripts/build.sh)" >&2; exit 1; }

if [[ $mode == gpu ]]; then
  device=cuda select="cuda and not emulated" compute="float16 float32"
  speed_args=(--windows 4 --diarize)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  export SAYWHO_CUDA_SYNC=1 # tests only: a kernel fault names its own launch
else
  device=cuda-emulated select="emulated" compute="float32" model=test-shape
  # one window, a few tokens, beam 5 only: the emulator runs each GPU thread as a fiber
  speed_args=(--windows 1 --tokens 4 --mode sequential --engines saywho faster-whisper)
fi

failed=() passed=()
step_done() { # $1: the step's name, $2: its exit status
  if [[ $2 -eq 0 ]]; then passed+=("$1"); else failed+=("$1 (exit $2)"); fi
}

echo "== 1. open $device and pass the self-check"
python3 - "$device" <<'PY'
import sys, time
import saywho
t0 = time.perf_counter()
with saywho.Pipeline(device=sys.argv[1], log_memory=False) as p:
    assert p.device == "cuda", f"runs on {p.device}: {p.fallback_reason}"
    print(f"{p.device_name}: opened and self-checked in {time.perf_counter() - t0:.2f} s")
PY
step_done "1 self-check" $?

echo "== 2. op parity on $device"
python3 -m pytest -q -p no:cacheprovider "${collect[@]}" tests/test_backend_ops.py -k "$select"
step_done "2 op parity" $?

echo "== 3. model goldens on $device"
if [[ $mode == gpu ]]; then
  python3 -m pytest -q -p no:cacheprovider "${collect[@]}" tests/test_transcribe.py tests/test_word_timestamps.py \
    tests/test_vad.py tests/test_diarization.py tests/test_half_precision.py tests/test_campp.py \
    tests/test_resnet_embedding.py tests/test_speaker_embedding.py -k "$select"
else
  echo "(the emulated goldens run in pytest: -k cuda-emulated; here the VAD ones only)"
  python3 -m pytest -q -p no:cacheprovider "${collect[@]}" tests/test_vad.py \
    -k "$select and timestamps and options0"
fi
step_done "3 model goldens" $?

echo "== 4. memory: every byte back after close()"
unset SAYWHO_CUDA_SYNC
python3 - "$device" "$mode" <<'PY'
import sys
import saywho
from saywho._internal.device import open_runtime
from tests.weights import whisper_dir
device, mode = sys.argv[1:]
watch = open_runtime(device)  # holds the CUDA context, so the baseline includes it
before = watch.memory()["free"]
audio = saywho.load_audio("tests/data/shared/jfk.wav")[: 16000 * 4]
for _ in range(2 if mode == "gpu" else 1):  # the emulator: one round is slow enough
    with saywho.Pipeline(model=whisper_dir("tiny.en"), device=device, log_memory=False) as p:
        p.transcribe(audio, beam_size=1)
        held = p.memory().allocated
    after = p.memory()
    assert after.reserved == 0 and after.allocated == 0, after
after_free = watch.memory()["free"]
watch.close()
print(f"pools: {held / 2**20:.1f} MiB held while open, 0 after close")
mib = (before - after_free) / 2**20
if mode == "gpu":
    assert abs(mib) < 8, f"the GPU's free memory is {mib:.1f} MiB lower after close"
    print(f"device free memory back to its baseline (difference {mib:.1f} MiB)")
else:
    print("device free memory: the emulator's is the host's, not checked")
PY
step_done "4 memory" $?

if [[ $speed == 1 ]]; then
  echo "== 5. speed (x realtime) against the peers, $model"
  python3 bench/bench_gpu.py --device "$device" --model "$model" --compute-type $compute \
    "${speed_args[@]}"
  step_done "5 speed" $?
fi
echo "gpu_check ($mode): passed: ${passed[*]:-none}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "gpu_check ($mode): FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu_check ($mode): done"
