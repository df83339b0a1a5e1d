"""Whisper model load time: saywho's WhisperModel against faster-whisper's,
from a local CTranslate2 folder (float16 weights), phase by phase.

Every figure is the best of --repeat fresh processes (page cache warm,
process memory cold, as a script that starts and loads a model), imports
outside the timing. saywho's phases, in one process:

- read: the model.bin memory-mapped and parsed, dims found, every tensor's
  shape checked (load_whisper);
- tokenizer: tokenizer.json parsed (Tokenizer);
- weights: the tensors into the core (_core.WhisperModel). float32 on the
  CPU: the float16 weight matrices stay where they lie in the map (the
  products widen them as they read them), the rest is widened into the
  backend's buffers; int8: quantized straight into them;
- of which copy: the same call given float32 arrays already widened by
  NumPy (widened outside the timing), in a process of its own: what moving
  the bytes alone costs, so "weights" minus it is the widening (float32
  models under 1 GB only: it holds a second float32 copy);

then "saywho" is the whole public call, WhisperModel(path, device="cpu"),
and "f-w" faster-whisper's WhisperModel(path, device="cpu"), each in fresh
processes of their own. Ratio: f-w seconds over saywho's (> 1: saywho faster).

    python3 bench/bench_load.py [--models tiny.en base] [--computes float32 int8]
        [--repeat 3] [--threads 2] [--large]

--large adds a model of large-v3's shapes with random float16 values
(bench/synthetic_whisper.py writes it once, 3 GB, into .cache/): a
synthetic checkpoint, for timing only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
# an installed saywho finds the checkout's test weights through this
os.environ.setdefault("SAYWHO_TEST_WEIGHTS", str(REPO / ".cache" / "test-weights"))


def worker(kind: str, path: str, compute: str, threads: int) -> dict:
    import numpy as np

    if kind == "f-w":
        from faster_whisper import WhisperModel

        t = time.perf_counter()
        WhisperModel(path, device="cpu", compute_type=compute, cpu_threads=threads)
        return {"total": time.perf_counter() - t}
    from saywho import _core
    from saywho._internal.device import open_runtime
    from saywho.models.whisper_weights import load_whisper
    from saywho.whisper.tokenizer import Tokenizer
    from saywho.whisper.transcribe import WhisperModel

    if kind == "saywho":
        t = time.perf_counter()
        model = WhisperModel(path, device="cpu", cpu_threads=threads, compute_type=compute)
        total = time.perf_counter() - t
        model.close()
        return {"total": total}
    runtime = open_runtime("cpu", threads)
    t0 = time.perf_counter()
    weights = load_whisper(path)
    t1 = time.perf_counter()
    if kind == "copy":
        tensors = {k: np.asarray(v, dtype=np.float32) for k, v in weights.tensors.items()}
        t1 = time.perf_counter()
        core = _core.WhisperModel(runtime, weights.dims, tensors, compute_type=compute)
        copy = time.perf_counter() - t1
        core.close()
        return {"copy": copy}
    Tokenizer(path, multilingual=weights.is_multilingual)
    t2 = time.perf_counter()
    core = _core.WhisperModel(runtime, weights.dims, weights.tensors, compute_type=compute)
    t3 = time.perf_counter()
    core.close()
    return {"read": t1 - t0, "tokenizer": t2 - t1, "weights": t3 - t2}


def best(kind: str, path: Path, compute: str, args) -> dict:
    """Each phase's best over --repeat fresh processes."""
    runs = []
    for _ in range(args.repeat):
        cmd = [sys.executable, __file__, "--worker", kind, "--path", str(path)]
        cmd += ["--compute", compute, "--threads", str(args.threads)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{kind} worker failed on {path}:\n{out.stderr[-2000:]}")
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: min(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["tiny.en", "base"])
    ap.add_argument("--computes", nargs="+", default=["float32", "int8"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--large", action="store_true", help="add a synthetic large-v3-shaped model")
    ap.add_argument("--worker")
    ap.add_argument("--path")
    ap.add_argument("--compute", default="float32")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.path, args.compute, args.threads)))
        return

    from checkout_weights import whisper_dir
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    models = [(name, whisper_dir(name)) for name in args.models]
    if args.large:
        from synthetic_whisper import write_synthetic

        models.append(("large-v3 (synthetic)", write_synthetic()))
    print(
        f"{args.threads} threads, CPU, best of {args.repeat} fresh processes, seconds; "
        "weights = widen (or quantize) + copy into the core"
    )
    print(
        f"{'model':21} {'MB':>5} {'compute':8} {'read':>6} {'tokenizer':>9} {'weights':>8} "
        f"{'of which copy':>13} {'saywho':>7} {'f-w':>7} {'ratio':>6}"
    )
    for name, path in models:
        mb = os.path.getsize(path / "model.bin") / 2**20
        for compute in args.computes:
            phases = best("phases", path, compute, args)
            # the copy-alone run holds a NumPy float32 copy too: skipped above 1 GB
            small = mb < 1024 and compute == "float32"
            copy = best("copy", path, compute, args)["copy"] if small else None
            ours = best("saywho", path, compute, args)["total"]
            peer = best("f-w", path, compute, args)["total"]
            copy_text = f"{copy:13.3f}" if copy is not None else f"{'-':>13}"
            print(
                f"{name:21} {mb:5.0f} {compute:8} {phases['read']:6.3f} "
                f"{phases['tokenizer']:9.3f} {phases['weights']:8.3f} {copy_text} "
                f"{ours:7.3f} {peer:7.3f} {peer / ours:6.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
