"""Missed overlapped speech, the two ideas left untried (issue 39, deliverable 5):
a count from the powerset's probabilities, and a second segmentation pass.

segmentation-3.0 gives each frame of a 10 s chunk one of 7 powerset classes
(no one, one of 3 local speakers, two of them); the pipeline keeps the most
likely class only, and its count is the mean over the covering chunks of
that class's number of speakers, rounded (bench/overlap_count_study.py
measured higher roundings of that mean: none helped). Here, over the cached
chunks of bench/diarization_dev_set.py (run that first) and the same
clustering, only the count and the activations summed per speaker change:

1. From the probabilities (the segmentation run again over the same chunks,
   keeping its log-probabilities):
   - ``E[n]``: the count is the mean over the covering chunks of the expected
     number of speakers, P(one) + 2 P(two), rounded;
   - ``P2>x``: the count is raised to 2 where the mean P(two) reaches x;
   - ``hard`` / ``soft``: each speaker's activation summed from the argmax's
     classes (today) or from its marginal probability (the sum of the
     classes it is in), so a second voice no argmax holds can be chosen.
2. A second pass: the chunks shifted by half a step (0.5 s at the default
   1 s), segmented and embedded as the first ones, over the frames where
   some chunk of the first pass found two voices (their count today may be
   1: the other chunks there did not agree); their local speakers go to the
   first pass's clusters through their embeddings (the same constrained
   assignment, after the clustering, which they do not enter); then
   - ``pooled``: the count is the mean over both passes' chunks, rounded,
     and the activations are summed over both;
   - ``raise``: the first pass's count, raised to the second pass's own
     (its chunks' mean, rounded) where that is higher; activations of both.
   The networks' cost is the share of chunks run again (printed).

Printed: missed / false alarm / confusion / DER at collar 0 pooled over the
AMI excerpts and over the rest of the set, the missed speech where the
reference has two or more voices, DER with the count given, counts right,
and each recording's DER per rule. The probabilities and the second pass's
chunks are cached in .cache/bench-audio/overlap-study.

    python3 bench/overlap_second_opinion_study.py [--threads 2]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import diarization_dev_set as dev  # noqa: E402
from conversations import counts  # noqa: E402
from machine import describe  # noqa: E402

import saywho  # noqa: E402
from saywho.diarization import reconstruct  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

# the module (saywho.diarization.diarize is also the name of a function)
diarize_module = importlib.import_module("saywho.diarization.diarize")

SR = 16000
CACHE = REPO / ".cache" / "bench-audio" / "overlap-study"
SPEAKERS_OF_CLASS = reconstruct.POWERSET.sum(axis=1)  # [7]: 0, 1, 1, 1, 2, 2, 2

TODAY_COUNT = reconstruct.speaker_count
TODAY_ACTIVATIONS = reconstruct.activations
TODAY_ASSIGN = diarize_module.assign_distinct


def key_of(x: np.ndarray) -> str:
    return hashlib.sha256(x.tobytes()).hexdigest()[:16]  # as dev.SavingDiarizer's


def probabilities(d, x, starts) -> np.ndarray:
    """[C, F, 7] float16 powerset probabilities of the first pass's chunks."""
    path = CACHE / f"{key_of(x)}-{d.step:g}-probs.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    parts = []
    for _, s, span, chunks in d._batches(x, starts):
        parts.append(np.exp(d.segmentation.run_span(span, s - s[0], chunks.shape[1])))
    probs = np.concatenate(parts).astype(np.float16)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, probs)
    print(f"# segmentation again: {len(x) / SR:.0f} s in {time.perf_counter() - t0:.0f} s")
    return probs


def second_pass(d, x, starts, active):
    """The chunks shifted by half a step that cover a frame where some chunk
    of the first pass found two voices: (starts, active, embeddings); only
    those are run (the rest would not be used)."""
    path = CACHE / f"{key_of(x)}-{d.step:g}-half.npz"
    if path.exists():
        z = np.load(path)
        return z["starts"], z["active"], z["embeddings"]
    offsets = reconstruct.chunk_frame_offsets(starts / SR, d.timing)
    total = int(offsets[-1]) + active.shape[1]
    found = overlap_frames(active, offsets, total)
    half = starts + round(d.step * SR / 2)
    half = half[half < len(x)]
    frames = active.shape[1]
    half_offsets = reconstruct.chunk_frame_offsets(half / SR, d.timing)
    half = half[[bool(found[o : o + frames].any()) for o in half_offsets]]
    t0 = time.perf_counter()
    if len(half):
        # the base class's networks, not the first pass's cache
        act, emb, _, _ = saywho.diarization.Diarizer._segment_and_embed(d, x, half, None)
    else:
        act = np.zeros((0, frames, 3), np.uint8)
        emb = np.zeros((0, 3, d.embedding.dimension), np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.savez(path, starts=half, active=act, embeddings=emb)
    print(f"# second pass: {len(half)} chunks of {len(starts)} in {time.perf_counter() - t0:.0f} s")
    return half, act, emb


def summed(values: np.ndarray, offsets: np.ndarray, total: int):
    """[G] sum over the chunks covering each frame of values [C, F], and how
    many chunks cover it."""
    frames = values.shape[1]
    out = np.zeros(total)
    covered = np.zeros(total)
    for c, off in enumerate(offsets):
        n = max(0, min(frames, total - off))
        out[off : off + n] += values[c, :n]
        covered[off : off + n] += 1.0
    return out, covered


class Rule:
    """One way to count and to sum activations; ``ctx`` is the recording's."""

    ctx: dict = {}

    def __init__(self, name, count=None, soft=False, extra=None):
        self.name, self.count_by, self.soft, self.extra = name, count, soft, extra

    # -- replacements of reconstruct's and diarize's functions -----------------
    def speaker_count(self, active, offsets, total):
        today = TODAY_COUNT(active, offsets, total)
        probs = self.ctx["probs"]
        if self.count_by == "expected":
            expected = (probs.astype(np.float32) * SPEAKERS_OF_CLASS).sum(axis=2)
            s, cov = summed(expected, offsets, total)
            return np.rint(s / np.maximum(cov, 1.0)).astype(np.int8)
        if isinstance(self.count_by, float):
            p2 = probs[:, :, 4:].astype(np.float32).sum(axis=2)
            s, cov = summed(p2, offsets, total)
            raised = (s / np.maximum(cov, 1.0)) >= self.count_by
            return np.maximum(today, np.where(raised, 2, 0).astype(np.int8))
        if self.extra:
            half = self.ctx["half_used"]
            n2, cov2 = summed(half["active"].sum(axis=2), half["offsets"], total)
            if self.extra == "pooled":
                n1, cov1 = summed(active.sum(axis=2), offsets, total)
                return np.rint((n1 + n2) / np.maximum(cov1 + cov2, 1.0)).astype(np.int8)
            second = np.where(cov2 > 0, np.rint(n2 / np.maximum(cov2, 1.0)), 0)
            return np.maximum(today, second.astype(np.int8))
        return today

    def assign_distinct(self, embeddings, is_active, centroids):
        self.ctx["centroids"] = centroids
        return TODAY_ASSIGN(embeddings, is_active, centroids)

    def activations(self, active, hard, offsets, total, speakers):
        if self.soft:
            marginal = self.ctx["probs"].astype(np.float32) @ reconstruct.POWERSET.astype(
                np.float32
            )
            out = TODAY_ACTIVATIONS(marginal, hard, offsets, total, speakers)
        else:
            out = TODAY_ACTIVATIONS(active, hard, offsets, total, speakers)
        if self.extra:
            half = self.ctx["half_used"]
            if len(half["offsets"]):
                is_active = half["active"].any(axis=1)
                centroids = self.ctx.get("centroids")
                if centroids is None:  # one speaker asked for: no clustering ran
                    hard2 = np.where(is_active, 0, -2)
                else:
                    hard2 = TODAY_ASSIGN(half["embeddings"], is_active, centroids)
                # the last shifted chunks may reach past the first pass's grid
                grid = int(half["offsets"].max()) + half["active"].shape[1]
                extra = TODAY_ACTIVATIONS(
                    half["active"], hard2, half["offsets"], max(grid, total), speakers
                )
                out = out + extra[:total]
        return out

    def __enter__(self):
        reconstruct.speaker_count = self.speaker_count
        reconstruct.activations = self.activations
        diarize_module.assign_distinct = self.assign_distinct
        return self

    def __exit__(self, *exc):
        reconstruct.speaker_count = TODAY_COUNT
        reconstruct.activations = TODAY_ACTIVATIONS
        diarize_module.assign_distinct = TODAY_ASSIGN


RULES = [
    Rule("today (argmax, rounded mean)"),
    Rule("E[n], hard", count="expected"),
    Rule("E[n], soft", count="expected", soft=True),
    Rule("P2>0.4, hard", count=0.4),
    Rule("P2>0.3, hard", count=0.3),
    Rule("P2>0.3, soft", count=0.3, soft=True),
    Rule("P2>0.2, soft", count=0.2, soft=True),
    Rule("second pass, pooled", extra="pooled"),
    Rule("second pass, raise", extra="raise"),
]


def overlap_frames(active, offsets, total):
    """Frames where some chunk of the first pass holds two local speakers."""
    most = np.zeros(total, np.int8)
    frames = active.shape[1]
    for c, off in enumerate(offsets):
        np.maximum(
            most[off : off + frames],
            active[c].sum(axis=1).astype(np.int8),
            out=most[off : off + frames],
        )
    return most >= 2


def missed_in_overlap(ref, hyp, grid=0.01) -> float:
    """Seconds of DER's missed speech (reference voices above the
    hypothesis's count) in frames where the reference has two or more."""
    end = max([t.end for t in ref] + [t.end for t in hyp] + [0.0])
    n = int(np.ceil(end / grid)) + 1
    r, h = np.zeros(n, np.int16), np.zeros(n, np.int16)
    for turns, out in ((ref, r), (hyp, h)):
        for t in turns:
            out[int(round(t.start / grid)) : int(round(t.end / grid))] += 1
    return float(np.maximum(r - h, 0)[r >= 2].sum() * grid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", help="recordings whose label holds this text")
    args = ap.parse_args()
    print(f"{describe()}; {args.threads} threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, args.threads)
    d = dev.SavingDiarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    timing = d.timing
    pooled = {}  # (rule, group) -> [speech, missed, fa, confusion, n, missed in overlap]
    given = {}  # rule -> [errors, speech]
    right = {}  # rule -> counts right
    per_file = []
    rerun = [0, 0]  # chunks of the second pass used / of the first pass
    recordings = [r for r in dev.dev_set() if not args.only or args.only in r[0]]
    # the cheap networks first (the count from probabilities), then the second pass
    for _, x, _ in recordings:
        starts = d._chunk_starts(len(x))
        d._segment_and_embed(x, starts, None)
        probabilities(d, x, starts)
    for _, x, _ in recordings:
        starts = d._chunk_starts(len(x))
        second_pass(d, x, starts, d._segment_and_embed(x, starts, None)[0])
    for label, x, ref in recordings:
        starts = d._chunk_starts(len(x))
        active, embeddings, trainable, _ = d._segment_and_embed(x, starts, None)
        probs = probabilities(d, x, starts)
        argmax = reconstruct.POWERSET[np.argmax(probs, axis=-1)]
        agree = float((argmax == active).mean())
        hs, ha, he = second_pass(d, x, starts, active)
        half_offsets = reconstruct.chunk_frame_offsets(hs / SR, timing)
        rerun[0] += len(hs)
        rerun[1] += len(starts)
        Rule.ctx = {
            "probs": probs,
            "half_used": {"offsets": half_offsets, "active": ha, "embeddings": he},
        }
        lo, hi = counts(ref)
        group = "AMI excerpts" if label.startswith("AMI") else "the rest"
        row = [label, f"{agree:.4f}"]
        for rule in RULES:
            with rule:
                Rule.ctx["centroids"] = None
                r = dev.evaluate(d, x)
                Rule.ctx["centroids"] = None
                rg = dev.evaluate(d, x, len({t.speaker for t in ref}))
            e = diarization_error_rate(ref, r.turns)
            eg = diarization_error_rate(ref, rg.turns)
            p = pooled.setdefault((rule.name, group), np.zeros(6))
            p += [e.total, e.missed, e.false_alarm, e.confusion, 1, missed_in_overlap(ref, r.turns)]
            g = given.setdefault(rule.name, np.zeros(2))
            g += [eg.der * eg.total, eg.total]
            right[rule.name] = right.get(rule.name, 0) + (lo <= len(r.speakers) <= hi)
            row.append(f"{100 * e.der:.1f} ({len(r.speakers)})")
        per_file.append(row)
        print("# " + " | ".join(row), flush=True)
    print(
        f"\nsecond pass: {rerun[0]} chunks run again over {rerun[1]} of the first pass "
        f"({100 * rerun[0] / max(rerun[1], 1):.0f}%)\n"
    )
    print(
        "| rule | recordings | speech s | missed % | of it in overlap % | false alarm % "
        "| confusion % | DER 0 % | DER 0 %, count given (all) | counts right |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rule in RULES:
        for group in ("AMI excerpts", "the rest"):
            if (rule.name, group) not in pooled:
                continue
            total, missed, fa, conf, n, ov = pooled[(rule.name, group)]
            err, speech = given[rule.name]
            print(
                f"| {rule.name} | {group} ({int(n)}) | {total:.0f} | {100 * missed / total:.1f} "
                f"| {100 * ov / total:.1f} | {100 * fa / total:.1f} | {100 * conf / total:.1f} "
                f"| {100 * (missed + fa + conf) / total:.1f} | {100 * err / speech:.1f} "
                f"| {right[rule.name]}/{len(per_file)} |"
            )
    print("\n| recording | argmax agrees | " + " | ".join(r.name for r in RULES) + " |")
    print("|---|---|" + "---|" * len(RULES))
    for row in per_file:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
