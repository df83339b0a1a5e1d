"""Transcription speed: saywho against faster-whisper, same weights, same threads.

Each engine runs in its own process (so peak RSS is its own) on the same
assembled recording of real speech; the table gives seconds, x realtime,
peak RSS and saywho's speed ratio over faster-whisper (> 1: saywho faster).
Temperature fallback is off (temperature=0) so both decode the same windows.

    python3 bench/bench_transcribe.py [--model tiny.en] [--minutes 5] [--threads 2]
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


def worker(engine: str, model: str, minutes: float, beam: int, threads: int, compute: str) -> dict:
    sys.path.insert(0, str(REPO))
    from saywho.models.test_weights import test_model_dir
    from tests.long_recording import assemble

    audio = assemble(DATA, minutes)
    path = str(test_model_dir(model))
    options = {"beam_size": beam, "temperature": 0.0}
    if engine == "saywho":
        from saywho.whisper.transcribe import WhisperModel

        m = WhisperModel(path, device="cpu", cpu_threads=threads, compute_type=compute)
    else:
        from faster_whisper import WhisperModel

        m = WhisperModel(path, device="cpu", compute_type=compute, cpu_threads=threads)
    t0 = time.perf_counter()
    segments, _ = m.transcribe(audio, **options)
    text = " ".join(s.text.strip() for s in segments)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"seconds": seconds, "audio": audio.size / 16000, "rss": rss, "words": len(text.split())}


def run(engine, args, beam, compute) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--model", args.model]
    cmd += ["--minutes", str(args.minutes), "--beam", str(beam), "--threads", str(args.threads)]
    cmd += ["--compute", compute]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--compute", default="float32")
    ap.add_argument("--only", help="one row, e.g. 'beam5-int8', for profiling")
    args = ap.parse_args()
    if args.worker:
        r = worker(args.worker, args.model, args.minutes, args.beam, args.threads, args.compute)
        print(json.dumps(r))
        return

    print(f"model {args.model}, {args.minutes:g} min of speech, {args.threads} threads, CPU")
    print(
        f"{'search':8} {'compute':8} {'saywho s':>9} {'x RT':>6} {'RSS MB':>7} "
        f"{'f-w s':>7} {'x RT':>6} {'RSS MB':>7} {'ratio':>6}"
    )
    for beam in (1, 5):
        for compute in ("float32", "int8"):
            if args.only and args.only != f"{'greedy' if beam == 1 else f'beam{beam}'}-{compute}":
                continue
            peer = run("faster-whisper", args, beam, compute)
            label = "greedy" if beam == 1 else f"beam {beam}"
            ours = run("saywho", args, beam, compute)
            print(
                f"{label:8} {compute:8} {ours['seconds']:9.1f} {ours['audio'] / ours['seconds']:6.1f} "
                f"{ours['rss'] / 2**20:7.0f} {peer['seconds']:7.1f} "
                f"{peer['audio'] / peer['seconds']:6.1f} {peer['rss'] / 2**20:7.0f} "
                f"{peer['seconds'] / ours['seconds']:6.2f}"
            )


if __name__ == "__main__":
    main()
