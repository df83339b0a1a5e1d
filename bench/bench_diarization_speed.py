"""Diarization speed with the default models, against pyannote.audio.

saywho's defaults (segmentation-3.0 and CAM++, pyannote's 1 s step) on the
two-speaker conversation (30 s) and the "meeting" (bench/recordings.py:
five voices, long pauses), and pyannote.audio's own pipeline on the same
models, samples and thread count (bench/pyannote_peer_run.py in the bench
venv of bench/setup_pyannote_venv.sh; --no-peer skips it). Each engine first
runs once on 12 s (warm-up), then the timed run.

Prints the CPU, the load average around each run (the box may be shared:
compare ratios taken in one go), seconds, x realtime and saywho's stage
seconds (segmentation, embeddings) per recording, saywho's speed over
pyannote.audio's, and the DER between the two engines' turns.
``--shared-front`` also times saywho with CAM++'s shared 2-D front (an
approximation, off by default: docs/diarization.md), and ``--embedding-step
S`` saywho with embeddings reused between chunks S seconds apart (reuse.py),
and with both options given, the two together, in the same go, each with its
own ratio to pyannote.audio.

To compare two builds of saywho, run it twice with PYTHONPATH pointing at
each (the figures in docs/diarization.md were taken that way).

    python3 bench/bench_diarization_speed.py [--threads 2] [--minutes 1.0] \
        [--recordings two,meeting] [--no-peer] [--peer-python PATH] [--shared-front] [--embedding-step S]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from bench_pyannote_peer import WARMUP, load, peer_python, run_peer  # noqa: E402
from machine import describe, force_peers_to_dispatch  # noqa: E402
from recordings import DATA, recording  # noqa: E402

import saywho  # noqa: E402
from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000


def audio_of(name: str, minutes: float):
    if name == "two":
        return "two_speakers.wav", saywho.load_audio(DATA / "two_speakers.wav")
    x = recording(name, minutes)
    return f"{name} ({len(x) / SR / 60:.1f} min)", x


def main() -> None:
    force_peers_to_dispatch()  # a lowered dispatch lowers torch's too
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=1.0, help="the meeting's, before stretch")
    ap.add_argument("--recordings", default="two,meeting")
    ap.add_argument("--no-peer", action="store_true", help="saywho only")
    ap.add_argument("--peer-python", help="the bench venv's python (default: set it up)")
    ap.add_argument("--shared-front", action="store_true", help="also saywho's shared_front")
    ap.add_argument(
        "--embedding-step", type=float, action="append", default=[],
        help="also saywho with this embedding step in seconds (repeatable)",
    )  # fmt: skip
    args = ap.parse_args()
    python = None if args.no_peer else peer_python(args.peer_python)
    seg, emb = resolve_segmentation(None), resolve_embedding(None)
    print(f"{describe()}; {args.threads} threads each; saywho from {Path(saywho.__file__).parent}")
    rows = []
    with _core.Runtime(device="cpu", threads=args.threads) as rt, ExitStack() as stack:
        d = stack.enter_context(Diarizer(seg, emb, rt))
        runs = [("saywho", d)]
        if args.shared_front:
            shared = stack.enter_context(Diarizer(seg, emb, rt, shared_front=True))
            runs.append(("shared_front", shared))
        for every in args.embedding_step:
            reusing = stack.enter_context(Diarizer(seg, emb, rt, embedding_step=every))
            runs.append((f"embedding_step {every:g}", reusing))
            if args.shared_front:  # the two approximations together
                both = Diarizer(seg, emb, rt, shared_front=True, embedding_step=every)
                runs.append((f"both, step {every:g}", stack.enter_context(both)))
        for name in args.recordings.split(","):
            label, audio = audio_of(name, args.minutes)
            dur = len(audio) / SR
            seconds = {}
            for engine, diarizer in runs:
                before = load()
                diarizer(audio[: int(WARMUP * SR)])
                t0 = time.perf_counter()
                result = diarizer(audio)
                seconds[engine] = spent = time.perf_counter() - t0
                stages = result.performance["stages"]
                print(f"{label}: {engine} {spent:.2f} s = {dur / spent:.1f}x realtime "
                      f"(segmentation {stages['segmentation']['seconds']:.2f} s, embeddings "
                      f"{stages['embeddings']['seconds']:.2f} s), {len(result.speakers)} speakers "
                      f"({before} before, {load()} after)", flush=True)  # fmt: skip
                if diarizer is d:
                    ours = result
            row = [label]
            for engine, _ in runs:
                row += [f"{seconds[engine]:.2f}", f"{dur / seconds[engine]:.1f}"]
            if python:
                before = load()
                peer = run_peer(python, audio, seg, emb, d.threshold, d.min_cluster_size,
                                args.threads, None)  # fmt: skip
                between = diarization_error_rate(peer["turns"], ours.turns, collar=0.0)
                print(f"{label}: pyannote.audio {peer['seconds']:.2f} s = "
                      f"{dur / peer['seconds']:.1f}x realtime, {peer['speakers']} speakers "
                      f"({before} before, {load()} after); saywho "
                      f"{peer['seconds'] / seconds['saywho']:.1f}x faster; "
                      f"DER between the engines' turns {100 * between.der:.1f}%", flush=True)  # fmt: skip
                row += [f"{peer['seconds']:.2f}", f"{dur / peer['seconds']:.1f}"]
                row += [f"{peer['seconds'] / seconds[engine]:.1f}" for engine, _ in runs]
            rows.append(row)
    cols = "".join(f" {engine} s | {engine} x RT |" for engine, _ in runs)
    if python:
        cols += " pyannote s | pyannote x RT |" + "".join(
            f" pyannote / {engine} |" for engine, _ in runs
        )
    print("\n| recording |" + cols)
    print("|---|" + "---|" * cols.count("|"))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
