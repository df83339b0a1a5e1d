"""Segmentation speed: saywho's core against onnxruntime, same ONNX weights.

Tiles tests/data/shared/two_speakers.wav to 5 minutes, cuts 10 s windows every
1 s as pyannote does, and runs segmentation-3.0 over all of them with saywho
and with onnxruntime (intra_op_num_threads = --threads, one window per call
as pyannote's export is run, and also batched), in one process. Prints
x-realtime of each and saywho's ratio over onnxruntime (> 1: faster), and the
largest difference of the outputs.

    python3 bench/bench_segmentation.py [--threads 2] [--minutes 5] [--batch 16]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from checkout_weights import weights_root

from saywho import _core
from saywho.audio.decode import load_audio
from saywho.diarization import SegmentationModel, load_segmentation, sliding_windows

REPO = Path(__file__).resolve().parents[1]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--onnx", default=None)
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    if os.environ.get("SAYWHO_CPU_DISPATCH", "auto").strip().lower() not in ("", "auto"):
        # onnxruntime's MLAS picks its kernels from CPUID and has no variable to lower them
        print("onnxruntime runs at the CPU's own level (it cannot be lowered)")

    import onnxruntime as ort

    onnx = args.onnx or str(weights_root() / "pyannote-segmentation-3.0" / "segmentation-3.0.onnx")
    data = REPO / "tests" / "data" / "shared"
    clip = load_audio(data / "two_speakers.wav")
    n = int(args.minutes * 60 * 16000)
    audio = np.tile(clip, n // len(clip) + 1)[:n]
    chunks, _ = sliding_windows(audio, duration=10.0, step=1.0)
    seconds = len(audio) / 16000
    print(f"{seconds:.0f} s of audio, {len(chunks)} windows of 10 s, {args.threads} threads")

    runtime = _core.Runtime(device="cpu", threads=args.threads)
    model = SegmentationModel(load_segmentation(onnx), runtime, batch_size=args.batch)
    model.run(chunks[:2])  # warm the pool and the threads
    ours, t_ours = timed(lambda: model.run(chunks))
    model.close()
    runtime.close()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    session = ort.InferenceSession(onnx, opts, providers=["CPUExecutionProvider"])
    session.run(None, {"input": chunks[:1, None]})
    theirs, t_one = timed(
        lambda: np.concatenate([session.run(None, {"input": c[None, None]})[0] for c in chunks])
    )
    b = args.batch
    _, t_batch = timed(
        lambda: [
            session.run(None, {"input": chunks[i : i + b, None]}) for i in range(0, len(chunks), b)
        ]
    )
    t_ort = min(t_one, t_batch)

    print(f"saywho       {t_ours:7.2f} s  {seconds / t_ours:7.1f}x realtime (batch {b})")
    print(f"onnxruntime  {t_one:7.2f} s  {seconds / t_one:7.1f}x realtime (one window a call)")
    print(f"onnxruntime  {t_batch:7.2f} s  {seconds / t_batch:7.1f}x realtime (batch {b})")
    print(f"ratio saywho / onnxruntime (its faster mode): {t_ort / t_ours:.2f}")
    print(f"max abs difference of the log-probabilities: {np.abs(ours - theirs).max():.3g}")


if __name__ == "__main__":
    main()
