#!/usr/bin/env bash
# Every GPU row of issue 37 (and the host CPU rows of issue 36) in ONE call of
# a lent GPU machine, within a time budget (default 360 s), most important
# rows first, each stage under its own timeout; a stage the budget no longer
# reaches is a line saying so, never a silent gap:
#
#   0. the machine: card, driver, CPU, Python, torch / transformers versions
#   1. after the float16 rows: Whisper's tokens on the GPU against the CPU on
#      the base shape (bench/gpu_token_parity.py: the goldens' weights do not
#      travel), then gpu_check.sh --no-speed: self-check, op parity, goldens
#      (those whose weights travelled), memory back to baseline
#   2. Whisper large-v3-turbo and large-v3 shapes (random weights made here),
#      float16 (then gpu_check), then float32, beam 5 sequential (2 windows) and
#      batched (8 windows, batch 8), saywho against transformers (SDPA) and
#      faster-whisper where it imports, 100 tokens a window
#   3. diarization (after gpu_check, before float32; issue 38): saywho's rows,
#      GE2E and the default CAM++, 10 min of speech at the Diarizer's GPU batch
#      (32 chunks); pyannote.audio's where it imports
#   4. the host CPU: bench_transcribe.py (tiny.en, base; 2 and 8 threads) where
#      the real weights travelled, else the same shapes with random weights
#
#   bash scripts/gpu_measure.sh [OUT_DIR]        # default $OUT (the device tool's), else .gpu-out
#   GPU_MEASURE_BUDGET=450 bash scripts/gpu_measure.sh
#
# Output (at most 8 files, the device tool's limit): measure.md (the stages
# and every row as markdown tables: docs/cuda_backend.md takes them as they
# are), measure.json, and the logs env.txt, gpu_check.log, whisper.log,
# diarization.log, host_cpu.log. docs/cuda_backend.md gives the `run` call.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-$PWD/.gpu-out}}
mkdir -p "$out"
rows=$(mktemp -d /tmp/gpu-measure.XXXXXX)
budget=${GPU_MEASURE_BUDGET:-360}
start=$SECONDS
stages=()

# saywho from the carried portable wheel where this Python has none (the GPU image)
if ! python3 -c "import saywho" 2>/dev/null; then
  wheel=$(ls .gpu/wheel/saywho-*.whl 2>/dev/null | head -1)
  if [[ -z $wheel ]]; then
    echo "gpu_measure: saywho is not installed and no wheel was carried (bash scripts/gpu_carry.sh)" >&2
    exit 1
  fi
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/saywho-site "$wheel" || exit 1
  export PYTHONPATH=/tmp/saywho-site${PYTHONPATH:+:$PYTHONPATH}
fi
if [[ -d .gpu/test-weights ]]; then
  export SAYWHO_TEST_WEIGHTS=${SAYWHO_TEST_WEIGHTS:-$PWD/.gpu/test-weights}
fi
export SAYWHO_TEST_WEIGHTS=${SAYWHO_TEST_WEIGHTS:-$PWD/.cache/test-weights}
export PYTHONUNBUFFERED=1
device=cuda shapes=${GPU_MEASURE_SHAPES:-large-v3-turbo large-v3} first=float16 then=float32
rows_limit=45 # seconds a shape's stage (two engines' rows) may take
seq_windows=2 batched_windows=8 batch=8 tokens=100 diar_windows=20 # 10 min to diarize
parity_model=base-shape parity_args=""
checkpoints=${GPU_MEASURE_CHECKPOINTS:-$PWD/.cache/shape-checkpoints} # multi-GB: made here, once
if ! nvidia-smi -L >/dev/null 2>&1; then
  # the dry run where no GPU answers: the emulator, the tiny test shape, a few tokens
  # (float32: the emulator's half-precision path is slower still)
  rows_limit=100 # the emulator runs each GPU thread as a fiber
  device=cuda-emulated shapes=test first=float32 then="" seq_windows=1 batched_windows=2 batch=2 tokens=4 diar_windows=1
  parity_model=test-shape parity_args="--windows 1 --tokens 4 --modes greedy"
  echo "gpu_measure: no GPU answers nvidia-smi here: a dry run on the emulator"
fi

stage() { # name limit log command...: runs it under min(limit, what the budget has left)
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((budget - (SECONDS - start)))
  if ((left < 15)); then
    echo "== $name: not run, the ${budget} s budget is spent" | tee -a "$out/$log"
    stages+=("| $name | not run: the ${budget} s budget was spent | - |")
    return
  fi
  ((limit > left)) && limit=$left
  echo "== $name (at most $limit s)" | tee -a "$out/$log"
  local t0=$SECONDS rc
  timeout -k 5 "$limit" "$@" 2>&1 | tee -a "$out/$log"
  rc=${PIPESTATUS[0]}
  local how="passed"
  ((rc == 124 || rc == 137)) && how="cut at its $limit s limit (rows done so far are kept)"
  ((rc != 0 && rc != 124 && rc != 137)) && how="failed (exit $rc; see $log)"
  stages+=("| $name | $how | $((SECONDS - t0)) s |")
}

bench() { # name limit log json bench_gpu args...
  local name=$1 limit=$2 log=$3 json=$4
  shift 4
  stage "$name" "$limit" "$log" python3 bench/bench_gpu.py --device "$device" \
    --checkpoints "$checkpoints" --json "$rows/$json" "$@"
}

machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  grep -m1 "model name" /proc/cpuinfo
  echo "logical CPUs: $(nproc)"
  python3 --version
  python3 - <<'PY'
from importlib.metadata import PackageNotFoundError, version
for name in ("saywho", "numpy", "torch", "transformers", "faster-whisper", "ctranslate2", "pyannote.audio"):
    try:
        print(f"{name} {version(name)}")
    except PackageNotFoundError:
        print(f"{name}: not installed")
from saywho import _core
print("saywho CPU dispatch:", _core.cpu_dispatch())
PY
}

shape_rows() { # shape compute limit: beam 5 sequential, then batched, each row given half its stage
  local shape=$1 compute=$2 limit=$3
  bench "$shape $compute beam 5 sequential" "$limit" whisper.log "$shape-$compute-seq.json" \
    --model "$shape-shape" --compute-type "$compute" --mode sequential --beam-size 5 \
    --windows $seq_windows --tokens $tokens --timeout $((limit / 2))
  bench "$shape $compute batched ($batch)" "$limit" whisper.log "$shape-$compute-batched.json" \
    --model "$shape-shape" --compute-type "$compute" --mode batched --beam-size 5 \
    --batch-size $batch --windows $batched_windows --tokens $tokens --timeout $((limit / 2))
}

make_shapes() { # the random-weight checkpoints, before any row's clock
  local formats=hf shape
  python3 -c "import faster_whisper" 2>/dev/null && formats="hf ct2" # its copy is as large again
  for shape in $shapes; do
    python3 bench/make_shape_checkpoint.py "$shape" "$checkpoints/$shape" --formats $formats || return
  done
}

stage "machine" 20 env.txt bash -c "$(declare -f machine); machine" # timeout runs no function
stage "make the checkpoints ($shapes)" 75 whisper.log \
  bash -c "$(declare -f make_shapes); shapes='$shapes' checkpoints='$checkpoints' make_shapes"
# float16 first, the issue's rows; gpu_check's op parity after them (the self-check also
# runs whenever saywho opens the GPU); float32 last, for float16's ratio over it
for shape in $shapes; do shape_rows "$shape" $first $rows_limit; done
# Whisper's tokens on the GPU against the CPU's (the goldens' weights do not travel)
stage "Whisper tokens on $device against the CPU ($parity_model)" 40 gpu_check.log \
  python3 bench/gpu_token_parity.py --model "$parity_model" --device "$device" \
  --checkpoints "$checkpoints" $parity_args
stage "gpu_check (no speed step)" 45 gpu_check.log bash scripts/gpu_check.sh --no-speed
# diarization before float32 (issue 38): GE2E's and the default CAM++'s rows, then the peer
bench "diarization (segmentation-3.0 + GE2E; + CAM++, the default)" 60 diarization.log diarization.json \
  --engines --diarize --windows $diar_windows --timeout 30
if python3 -c "import pyannote.audio" 2>/dev/null; then
  stage "pyannote.audio peer" 40 diarization.log python3 bench/bench_pyannote_peer.py
else
  echo "pyannote.audio: not importable here (no wheels carried): its diarization rows (issue 38) are not measured" |
    tee -a "$out/diarization.log"
  stages+=("| pyannote.audio peer | not run: pyannote.audio does not import here (no wheels carried) | - |")
fi
for compute in $then; do
  for shape in $shapes; do shape_rows "$shape" "$compute" $((rows_limit - 1)); done
done
if python3 -c "from tests.weights import whisper_dir; whisper_dir('tiny.en'); whisper_dir('base')" 2>/dev/null; then
  for model in tiny.en base; do
    for threads in 2 8; do
      stage "host CPU $model, $threads threads" 30 host_cpu.log python3 bench/bench_transcribe.py \
        --model "$model" --threads "$threads" --minutes 1 --recordings speech
    done
  done
else
  echo "host CPU: the real tiny.en/base weights did not travel; the same shapes with random weights" |
    tee -a "$out/host_cpu.log"
  for model in tiny base; do
    for threads in 2 8; do
      bench "host CPU $model shape, $threads threads" 40 host_cpu.log "cpu-$model-$threads.json" \
        --model "$model-shape" --device cpu --threads "$threads" --compute-type float32 int8 \
        --mode sequential --beam-size 5 --windows 2 --tokens 100 --timeout 20
    done
  done
fi

python3 - "$rows" "$out" "$budget" "${stages[@]}" <<'PY'
"""measure.json and measure.md: the stages, then every bench row as one table."""
import json, sys
from pathlib import Path
sys.path.insert(0, "bench")
from bench_gpu import table

rows_dir, out, budget, stages = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
machine, rows = {}, []
for f in sorted(rows_dir.glob("*.json"), key=lambda f: f.stat().st_mtime):  # as run
    got = json.loads(f.read_text())
    machine = machine or got["machine"]
    rows += got["rows"]
machine = machine or {"card": "?", "driver": "?", "cpu": "?"}
(out / "measure.json").write_text(json.dumps({"machine": machine, "stages": stages, "rows": rows}, indent=1))
md = ["# gpu_measure", "", f"budget {budget} s", "", "| stage | outcome | took |", "|---|---|---|", *stages, ""]
md.append(table(rows, machine) if rows else "no bench rows were measured")
(out / "measure.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
PY
rm -rf "$rows"
echo "gpu_measure: done in $((SECONDS - start)) s; $out/measure.md"
