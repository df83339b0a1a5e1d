"""saywho against pyannote.audio's own pipeline on the same models and audio.

Both run pyannote 3.1's algorithm with segmentation-3.0 (the same
pytorch_model.bin) and CAM++ (the same campplus_cn_en_common.pt) at saywho's
CAM++ clustering threshold and min_cluster_size, on the same samples, with
the same number of threads: saywho in this process, pyannote.audio 3.3.2
under torch in its own venv (bench/setup_pyannote_venv.sh;
bench/pyannote_peer_run.py). Each engine first runs once on 12 s of the
recording (warm-up), then the timed run. Both outputs are scored here by the
same DER code (saywho.eval.metrics, pyannote.metrics' definition).

Prints the CPU, the load average around each run (the box may be shared),
DER with missed / false alarm / confusion (collar 0 and 0.25 s), speakers
found, seconds and x realtime per engine, saywho's speed ratio, and how far
the two engines' turns are from each other (DER of saywho's output against
pyannote's).

    bash bench/setup_pyannote_venv.sh          # once; prints the venv's python
    python3 bench/bench_pyannote_peer.py [--peer-python PATH] [--threads 2] \
        [--recordings two,real,espeak] [--given]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from diarization_quality import recordings, speakers_in  # noqa: E402
from machine import describe  # noqa: E402

from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.formats.rttm import Turn  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000
WARMUP = 12.0


def load() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def peer_python(given: str | None) -> str:
    if given:
        return given
    out = subprocess.run(
        ["bash", str(REPO / "bench" / "setup_pyannote_venv.sh")],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


def run_peer(python, audio, seg, emb, threshold, min_size, threads, num) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audio.npy"
        np.save(path, audio)
        cmd = [
            python, str(REPO / "bench" / "pyannote_peer_run.py"),
            "--audio", str(path), "--segmentation", str(seg), "--campp", str(emb),
            "--threshold", repr(threshold), "--min-cluster-size", str(min_size),
            "--threads", str(threads), "--warmup", str(WARMUP),
        ] + (["--num-speakers", str(num)] if num else [])  # fmt: skip
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["turns"] = [Turn(a, b, s) for a, b, s in res["turns"]]
    return res


def run_saywho(d: Diarizer, audio, num) -> dict:
    d(audio[: int(WARMUP * SR)])
    t0 = time.perf_counter()
    out = d(audio, num_speakers=num)
    seconds = time.perf_counter() - t0
    return {"turns": out.turns, "seconds": seconds, "speakers": len(out.speakers)}


def scores(ref, turns) -> tuple:
    strict = diarization_error_rate(ref, turns, collar=0.0)
    loose = diarization_error_rate(ref, turns, collar=0.25)
    return strict, loose


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer-python", help="the bench venv's python (default: set it up)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--recordings", default="two,real,espeak")
    ap.add_argument("--given", action="store_true", help="also run with the speaker count given")
    args = ap.parse_args()
    python = peer_python(args.peer_python)
    seg, emb = resolve_segmentation(None), resolve_embedding("campp")
    wanted = args.recordings.split(",")
    print(f"{describe()}; {args.threads} threads each; {load()}")
    rows, pooled = [], {"saywho": np.zeros(4), "pyannote": np.zeros(4)}
    with (
        _core.Runtime(device="cpu", threads=args.threads) as rt,
        Diarizer(seg, emb, rt) as d,
    ):
        print(f"threshold {d.threshold}, min_cluster_size {d.min_cluster_size}, step {d.step} s")
        for label, audio, ref in recordings():
            if not any(label.lower().startswith(w) or f" {w}" in label.lower() for w in wanted):
                continue
            for num in (None, speakers_in(ref)) if args.given else (None,):
                res = {}
                before = load()
                res["pyannote"] = run_peer(
                    python, audio, seg, emb, d.threshold, d.min_cluster_size, args.threads, num
                )
                middle = load()
                res["saywho"] = run_saywho(d, audio, num)
                print(f"\n{label}, count {'given' if num else 'not given'} "
                      f"({before} before pyannote, {middle} before saywho, {load()} after)")  # fmt: skip
                dur = len(audio) / SR
                for engine in ("pyannote", "saywho"):
                    r = res[engine]
                    strict, loose = scores(ref, r["turns"])
                    t = strict.total
                    if num is None:
                        pooled[engine] += [strict.missed, strict.false_alarm, strict.confusion, t]
                    row = (
                        f"| {label} | {'yes' if num else 'no'} | {engine} | "
                        f"{100 * strict.der:.1f} | {100 * loose.der:.1f} | "
                        f"{100 * strict.missed / t:.1f} | {100 * strict.false_alarm / t:.1f} | "
                        f"{100 * strict.confusion / t:.1f} | {r['speakers']}/{speakers_in(ref)} | "
                        f"{r['seconds']:.1f} | {dur / r['seconds']:.1f} |"
                    )
                    rows.append(row)
                    print(row)
                ratio = res["pyannote"]["seconds"] / res["saywho"]["seconds"]
                between = diarization_error_rate(
                    res["pyannote"]["turns"], res["saywho"]["turns"], collar=0.0
                )
                print(f"saywho {ratio:.1f}x faster; saywho against pyannote's output: "
                      f"DER {100 * between.der:.1f}%")  # fmt: skip
    print(f"\npyannote.audio {res['pyannote']['pyannote.audio']}, torch {res['pyannote']['torch']}")
    print("\n| recording | count given | engine | DER 0 | DER 0.25 | missed | FA | confusion "
          "| found | s | x RT |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    for engine, (m, f, c, t) in pooled.items():
        print(f"pooled, count not given, {engine}: DER {100 * (m + f + c) / t:.2f}% "
              f"(missed {100 * m / t:.2f}, FA {100 * f / t:.2f}, confusion {100 * c / t:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
