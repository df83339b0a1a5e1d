"""Batched transcription speed: saywho's BatchedInferencePipeline against
faster-whisper's, same weights, same threads, same audio.

Each engine runs in its own process on the same recordings
(bench/recordings.py: "speech", mostly talk, and "meeting", longer, five
voices, long pauses), VAD on, no timestamp tokens, beam 5: the batched
defaults. The table gives, per recording, seconds of transcription (model
loaded before the clock starts) and with the load included, x realtime, peak
RSS, saywho's speed ratio both ways (> 1: saywho faster) and the WER between
the two texts. The first line says which CPU and kernels ran.

    python3 bench/bench_batched.py [--model tiny.en] [--minutes 5] [--threads 2] [--batch 8]
        [--recordings speech meeting] [--computes float32 int8]
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
sys.path.insert(0, str(REPO / "bench"))


def worker(engine, model, recording_name, minutes, threads, compute, batch) -> dict:
    from checkout_weights import whisper_dir
    from recordings import recording

    audio = recording(recording_name, minutes)
    path = str(whisper_dir(model))
    t0 = time.perf_counter()
    if engine == "saywho":
        from saywho.whisper import BatchedInferencePipeline
        from saywho.whisper.transcribe import WhisperModel

        m = WhisperModel(path, device="cpu", cpu_threads=threads, compute_type=compute)
    else:
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        m = WhisperModel(path, device="cpu", compute_type=compute, cpu_threads=threads)
    pipeline = BatchedInferencePipeline(m)
    t1 = time.perf_counter()
    segments, _ = pipeline.transcribe(audio, batch_size=batch)
    text = " ".join(s.text.strip() for s in segments)
    seconds = time.perf_counter() - t1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "load": t1 - t0, "audio": audio.size / 16000, "rss": rss,
            "text": text}  # fmt: skip


def run(engine, args, recording_name, compute) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--model", args.model]
    cmd += ["--recording", recording_name]
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
    ap.add_argument("--recordings", nargs="+", default=["speech", "meeting"])
    ap.add_argument("--computes", nargs="+", default=["float32", "int8"])
    ap.add_argument("--worker")
    ap.add_argument("--recording", default="speech")
    ap.add_argument("--compute", default="float32")
    args = ap.parse_args()
    from machine import describe, force_peers_to_dispatch

    force_peers_to_dispatch()  # a lowered dispatch lowers the peer's too

    print(describe())  # the CPU and kernels, so figures are never compared blind
    if args.worker:
        r = worker(args.worker, args.model, args.recording, args.minutes, args.threads,
                   args.compute, args.batch)  # fmt: skip
        print(json.dumps(r))
        return

    from recordings import describe as describe_recording
    from recordings import recording

    from saywho.eval.wer import word_error_rate

    print(f"model {args.model}, batch {args.batch}, {args.threads} threads, CPU, beam 5")
    for name in args.recordings:
        print(f"\n{describe_recording(name, recording(name, args.minutes))}")
        print(
            f"{'compute':8} {'saywho s':>9} {'+load':>6} {'x RT':>6} {'RSS MB':>7} "
            f"{'f-w s':>7} {'+load':>6} {'x RT':>6} {'RSS MB':>7} {'ratio':>6} {'+load':>6} "
            f"{'WER':>6}"
        )
        for compute in args.computes:
            peer = run("faster-whisper", args, name, compute)
            ours = run("saywho", args, name, compute)
            print(
                f"{compute:8} {ours['seconds']:9.1f} {ours['seconds'] + ours['load']:6.1f} "
                f"{ours['audio'] / ours['seconds']:6.1f} {ours['rss'] / 2**20:7.0f} "
                f"{peer['seconds']:7.1f} {peer['seconds'] + peer['load']:6.1f} "
                f"{peer['audio'] / peer['seconds']:6.1f} {peer['rss'] / 2**20:7.0f} "
                f"{peer['seconds'] / ours['seconds']:6.2f} "
                f"{(peer['seconds'] + peer['load']) / (ours['seconds'] + ours['load']):6.2f} "
                f"{word_error_rate(peer['text'], ours['text']):6.1%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
