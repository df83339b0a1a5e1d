"""Batched transcription speed: saywho's BatchedInferencePipeline against
faster-whisper's, same weights, same threads, same audio.

Each engine runs in its own process on the assembled recording of real speech
(VAD on, no timestamp tokens, beam 5: the batched defaults); the table gives
seconds, x realtime, peak RSS, saywho's speed ratio (> 1: saywho faster) and
the WER between the two texts.

    python3 bench/bench_batched.py [--model tiny.en] [--minutes 5] [--threads 2] [--batch 8]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


def worker(engine, model, minutes, threads, compute, batch) -> dict:
    sys.path.insert(0, str(REPO))
    from saywho.models.test_weights import test_model_dir
    from tests.long_recording import assemble

    audio = assemble(DATA, minutes)
    path = str(test_model_dir(model))
    if engine == "saywho":
        from saywho.whisper import BatchedInferencePipeline
        from saywho.whisper.transcribe import WhisperModel

        m = WhisperModel(path, device="cpu", cpu_threads=threads, compute_type=compute)
    else:
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        m = WhisperModel(path, device="cpu", compute_type=compute, cpu_threads=threads)
    pipeline = BatchedInferencePipeline(m)
    t0 = time.perf_counter()
    segments, _ = pipeline.transcribe(audio, batch_size=batch)
    text = " ".join(s.text.strip() for s in segments)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "audio": audio.size / 16000, "rss": rss, "text": text}


def run(engine, args, compute) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--model", args.model]
    cmd += ["--minutes", str(args.minutes), "--threads", str(args.threads)]
    cmd += ["--compute", compute, "--batch", str(args.batch)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--worker")
    ap.add_argument("--compute", default="float32")
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    if args.worker:
        r = worker(args.worker, args.model, args.minutes, args.threads, args.compute, args.batch)
        print(json.dumps(r))
        return

    from saywho.wer import word_error_rate

    print(
        f"model {args.model}, {args.minutes:g} min of speech, batch {args.batch}, "
        f"{args.threads} threads, CPU, beam 5"
    )
    print(
        f"{'compute':8} {'saywho s':>9} {'x RT':>6} {'RSS MB':>7} "
        f"{'f-w s':>7} {'x RT':>6} {'RSS MB':>7} {'ratio':>6} {'WER':>6}"
    )
    for compute in ("float32", "int8"):
        peer = run("faster-whisper", args, compute)
        ours = run("saywho", args, compute)
        print(
            f"{compute:8} {ours['seconds']:9.1f} {ours['audio'] / ours['seconds']:6.1f} "
            f"{ours['rss'] / 2**20:7.0f} {peer['seconds']:7.1f} "
            f"{peer['audio'] / peer['seconds']:6.1f} {peer['rss'] / 2**20:7.0f} "
            f"{peer['seconds'] / ours['seconds']:6.2f} "
            f"{word_error_rate(peer['text'], ours['text']):6.1%}"
        )


if __name__ == "__main__":
    main()
