"""Speakers found and DER on the development set, for many voices (issue 39).

The set: the bundled two_speakers.wav, stereo pair and jfk.wav; the 14 AMI
excerpts (bash bench/fetch_conversations.sh); the real calls of
../shared/data/conversations (SpokenWOZ: non-commercial, read from there,
never copied; the rows are left out, saying so, when the folder is absent);
and meetings of three and four real voices made from those calls: each
speaker's solo turns cut from the calls by their reference and placed one
after another, sometimes overlapping (``meeting``). None is scored by a test.

The networks run once per recording; their chunks (local speakers'
activity, embeddings) are saved under .cache/bench-audio/dev-set-chunks, so
each setting below only re-runs the clustering and reconstruction
(Diarizer.from_chunks). A setting is ``name=value`` pairs of Diarizer
attributes, e.g. ``min_duration_on=0 min_duration_off=0`` for no floor.

    python3 bench/diarization_dev_set.py [--setting "min_duration_on=0 min_duration_off=0"]...
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from conversations import ami, counts  # noqa: E402
from diarization_quality import bundled  # noqa: E402
from machine import describe  # noqa: E402

import saywho  # noqa: E402
from saywho._internal.performance import Performance  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.formats.rttm import Turn, read_rttm  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000
CALLS = REPO.parent / "shared" / "data" / "conversations"
CHUNKS = REPO / ".cache" / "bench-audio" / "dev-set-chunks"


def calls():
    """(name, samples, reference) of each real call in ../shared, if there."""
    if not CALLS.is_dir():
        print(f"# {CALLS} is absent: the real calls and the meetings made of them are left out")
        return
    for wav in sorted(CALLS.glob("*.wav")):
        (ref,) = read_rttm(wav.with_suffix(".rttm")).values()
        yield wav.stem, saywho.load_audio(wav), ref


def solo_clips(samples, ref, speaker, min_seconds=1.0):
    """The stretches where ``speaker`` alone speaks, at least min_seconds each."""
    others = [t for t in ref if t.speaker != speaker]
    out = []
    for t in ref:
        if t.speaker != speaker:
            continue
        pieces = [(t.start, t.end)]
        for o in others:  # cut out everyone else's speech
            pieces = [
                q
                for a, b in pieces
                for q in ((a, min(b, o.start)), (max(a, o.end), b))
                if q[1] - q[0] > 0
            ]
        out += [samples[int(a * SR) : int(b * SR)] for a, b in pieces if b - a >= min_seconds]
    return out


def meeting(voices, seed=0, minutes=4.0):
    """Real voices' solo clips (``voices``: (label, clips)) placed in a random
    order, no voice twice in a row, 0.2-0.8 s apart or overlapping the last
    by 0.3-1.0 s (a quarter of them); the reference is where each clip lies."""
    rng = np.random.default_rng(seed)
    used = [0] * len(voices)
    pieces, turns, end, last = [], [], 0, -1
    while end < minutes * 60 * SR:
        who = int(rng.integers(len(voices)))
        if who == last:
            who = (who + 1) % len(voices)
        label, clips = voices[who]
        x = clips[used[who] % len(clips)]
        used[who] += 1
        if pieces and rng.random() < 0.25:
            start = max(0, end - int(rng.uniform(0.3, min(1.0, len(x) / SR / 2)) * SR))
        else:
            start = end + int(rng.uniform(0.2, 0.8) * SR)
        pieces.append((start, x))
        turns.append(Turn(start / SR, (start + len(x)) / SR, label))
        end, last = max(end, start + len(x)), who
    out = np.zeros(end + SR // 2, np.float32)
    for start, x in pieces:
        out[start : start + len(x)] += x
    return out, turns


def meetings(found_calls):
    """A three-voice and a four-voice meeting from the calls' speakers."""
    by_name = {name: (x, ref) for name, x, ref in found_calls}
    need = ("aws_lca_autorepairs40", "spokenwoz_MUL1423", "spokenwoz_SNG0072")
    if not all(n in by_name for n in need):
        return
    voices = []
    for name in need:
        x, ref = by_name[name]
        for speaker in sorted({t.speaker for t in ref}):
            voices.append((f"{name}:{speaker}", solo_clips(x, ref, speaker)))
    # the call-centre call's two people and one SpokenWOZ user
    three = [voices[0], voices[1], voices[2]]
    x, turns = meeting(three, seed=1, minutes=3.0)
    yield f"meeting of 3 real voices ({len(x) / SR:.0f} s)", x, turns
    four = [voices[0], voices[1], voices[4], voices[5]]
    x, turns = meeting(four, seed=2, minutes=3.0)
    yield f"meeting of 4 real voices ({len(x) / SR:.0f} s)", x, turns


def dev_set():
    yield from bundled()
    yield from ami()
    found = list(calls())
    yield from ((f"call {n} (2 voices)", x, ref) for n, x, ref in found)
    yield from meetings(found)


class SavingDiarizer(Diarizer):
    """Runs the networks once per recording, keeping their chunks on disk."""

    def _segment_and_embed(self, audio, starts, progress):
        key = hashlib.sha256(audio.tobytes()).hexdigest()[:16]
        path = CHUNKS / f"{key}-{self.step:g}.npz"
        if path.exists():
            z = np.load(path)
            return z["active"], z["embeddings"], z["trainable"], {}
        t0 = time.perf_counter()
        active, embeddings, trainable, seconds = super()._segment_and_embed(audio, starts, progress)
        CHUNKS.mkdir(parents=True, exist_ok=True)
        np.savez(path, active=active, embeddings=embeddings, trainable=trainable)
        print(f"# networks: {len(audio) / SR:.0f} s in {time.perf_counter() - t0:.0f} s")
        return active, embeddings, trainable, seconds


def cluster_chunks(diarizer, x, starts, chunks, num=None):
    """The clustering and reconstruction alone, on the networks' output for
    x (chunks: _segment_and_embed's active, embeddings, trainable, seconds);
    num given bounds the count both ways, as process() does."""
    active, embeddings, trainable, seconds = chunks
    lo, hi = (num, num) if num else (1, float("inf"))
    return diarizer.from_chunks(
        active=active,
        embeddings=embeddings,
        trainable=trainable,
        starts=starts,
        duration=len(x) / SR,
        num=num,
        lo=lo,
        hi=hi,
        seconds=dict(seconds),
        perf=Performance(len(x) / SR, time.perf_counter()),
    )


def evaluate(diarizer, x, num=None):
    starts = diarizer._chunk_starts(len(x))
    return cluster_chunks(diarizer, x, starts, diarizer._segment_and_embed(x, starts, None), num)


def parse(value: str):
    """A setting's value: None, true/false, a whole number or a number."""
    if value in ("None", "true", "false"):
        return {"None": None, "true": True, "false": False}[value]
    return int(value) if value.lstrip("-").isdigit() else float(value)


def shortest(turns) -> float:
    return min((t.end - t.start for t in turns), default=float("nan"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", action="append", default=[], help="name=value ... (repeatable)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", help="recordings whose label holds this text")
    args = ap.parse_args()
    settings = [""] + args.setting
    print(f"{describe()}; {args.threads} threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, args.threads)
    d = SavingDiarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    defaults = {k: getattr(d, k) for s in settings for k in dict(p.split("=") for p in s.split())}
    print(
        "| recording | setting | count given | found / expected | DER 0 | DER 0.5 s | shortest turn s |"
    )
    print("|---|---|---|---|---|---|---|")
    pooled = {}
    for label, x, ref in dev_set():
        if args.only and args.only not in label:
            continue
        lo, hi = counts(ref)
        expected = str(lo) if lo == hi else f"{lo}-{hi}"
        for setting in settings:
            for k, v in defaults.items():
                setattr(d, k, v)
            for k, v in (p.split("=") for p in setting.split()):
                setattr(d, k, parse(v))
            for num in (None, len({t.speaker for t in ref})):
                r = evaluate(d, x, num)
                e0 = diarization_error_rate(ref, r.turns)
                e5 = diarization_error_rate(ref, r.turns, collar=0.5)
                name = setting or "default"
                p = pooled.setdefault((name, num is not None), [0.0, 0.0, 0, 0])
                p[0] += e0.der * e0.total
                p[1] += e0.total
                right = lo <= len(r.speakers) <= hi
                p[2] += right
                p[3] += 1
                print(
                    f"| {label} | {name} | {num or 'no'} | {len(r.speakers)}/{expected}"
                    f"{'' if right else ' **wrong**'} | {100 * e0.der:.1f} | {100 * e5.der:.1f} "
                    f"| {min(shortest(r.turns), shortest(r.exclusive)):.3f} |",
                    flush=True,
                )
    for (name, given), (err, total, right, n) in pooled.items():
        print(
            f"# {name}, count {'given' if given else 'not given'}: pooled DER 0 "
            f"{100 * err / total:.1f}%, counts right {right}/{n}"
        )


if __name__ == "__main__":
    main()
