"""Why the count is still wrong on three recordings of the development set,
and what the untried candidates would see (issue 39, deliverable 2).

Over the cached chunks of bench/diarization_dev_set.py (run that first; the
networks are not re-run), per recording:

- ``CAM++`` / ``GE2E``: speakers found (DER % at collar 0) by the default
  pipeline and by the same pipeline with resemblyzer's GE2E embedding the
  same local speakers (segmentation-3.0's activity of the cached chunks, so
  only the encoder differs; its embeddings are cached beside the chunks), at
  GE2E's threshold 0.45, without the count bound (GE2E's default) and with it;
- ``pairs``: CAM++ distances (unit vectors) between two local speakers of
  one chunk, each alone for 1 s there: between different reference speakers
  (min / 10th percentile) and within one (median), what a per-recording
  threshold would read;
- ``closest voices``: the two reference speakers whose CAM++ centroids lie
  nearest, that distance over the wider of the two voices' median spread
  from their own centroid, and the same ratio in GE2E's space (above 1: the
  voices are further apart than one of them is wide);
- ``links``: segmentation-3.0's local speakers continued from one chunk to
  the next (reuse.match_anchor) that the default clustering puts in two
  different clusters, of all such continuations, and how many of those cross
  links join one reference speaker (a must-link merge would use them).

    python3 bench/count_candidates_study.py [--only TEXT]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from conversations import counts  # noqa: E402
from diarization_dev_set import CHUNKS, SavingDiarizer, dev_set  # noqa: E402
from embedding_spread import reference_owner  # noqa: E402
from machine import describe  # noqa: E402

import saywho  # noqa: E402
from saywho._internal.performance import Performance  # noqa: E402
from saywho.diarization import Diarizer, reconstruct  # noqa: E402
from saywho.diarization.clustering import _unit, cluster_embeddings  # noqa: E402
from saywho.diarization.cooccurrence import MIN_SOLO_SECONDS  # noqa: E402
from saywho.diarization.count_bound import speakers_vouched_for  # noqa: E402
from saywho.diarization.reuse import match_anchor  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000


def ge2e_embeddings(g: Diarizer, x, starts, active):
    """GE2E embeddings [C, 3, 256] and trainable [C, 3] of the cached chunks'
    local speakers, chosen the way Diarizer does for GE2E (clean frames, or
    all when too few are clean); cached beside the chunks."""
    key = hashlib.sha256(x.tobytes()).hexdigest()[:16]
    path = CHUNKS / f"{key}-ge2e.npz"
    if path.exists():
        z = np.load(path)
        return z["embeddings"], z["trainable"]
    emb = np.full((len(starts), 3, g.embedding.dimension), np.nan, np.float32)
    trainable = np.zeros((len(starts), 3), bool)
    for i, s, span, _ in g._batches(x, starts):
        g._embed_ge2e(span, s, active[i : i + len(s)], i, emb, trainable)
    np.savez(path, embeddings=emb, trainable=trainable)
    return emb, trainable


def run(d: Diarizer, x, starts, active, emb, trainable):
    duration = len(x) / SR
    return d.from_chunks(
        active=active,
        embeddings=emb,
        trainable=trainable,
        starts=starts,
        duration=duration,
        num=None,
        lo=1,
        hi=float("inf"),
        seconds={},
        perf=Performance(duration, time.perf_counter()),
    )


def default_labels(d: Diarizer, active, emb, trainable):
    """The default pipeline's cluster of each training embedding."""
    train = active.any(axis=1) & trainable
    lo = max(1, speakers_vouched_for(active, trainable, d.timing.step))
    found = cluster_embeddings(
        emb[train], d.threshold, d.min_cluster_size, min_clusters=lo, max_clusters=np.inf
    )
    return d._split_cooccurring(active, train, emb, found.labels, np.inf)


def closest_voices(points, owners):
    """(distance, ratio to the wider voice's median spread) of the two
    reference speakers whose centroids lie nearest."""
    names = sorted(set(owners))
    if len(names) < 2:
        return float("nan"), float("nan")
    u = _unit(points.astype(np.float64))
    cent = {n: _unit(u[owners == n].mean(axis=0, keepdims=True))[0] for n in names}
    wide = {n: np.median(np.linalg.norm(u[owners == n] - cent[n], axis=1)) for n in names}
    dist, a, b = min(
        (np.linalg.norm(cent[a] - cent[b]), a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
    return dist, dist / max(wide[a], wide[b])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="recordings whose label holds this text")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    print(f"{describe()}; {args.threads} threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, args.threads)
    c = SavingDiarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    g = Diarizer(resolve_segmentation(None), resolve_embedding("ge2e"), runtime)
    print(
        "| recording | expected | CAM++ | GE2E | GE2E with the count bound | pairs: different min / p10, same median (n) "
        "| closest voices: CAM++ distance (ratio), GE2E ratio | links across clusters "
        "(same voice) / all |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, x, ref in dev_set():
        if args.only and args.only not in label:
            continue
        lo, hi = counts(ref)
        starts = c._chunk_starts(len(x))
        active, emb, trainable, _ = c._segment_and_embed(x, starts, None)
        gemb, gtrain = ge2e_embeddings(g, x, starts, active)
        found = []
        for d, e, t, bound in (
            (c, emb, trainable, True),
            (g, gemb, gtrain, False),
            (g, gemb, gtrain, True),
        ):
            d.count_bound = bound
            r = run(d, x, starts, active, e, t)
            der = diarization_error_rate(ref, r.turns).der
            found.append(f"{len(r.speakers)} ({100 * der:.1f})")
        train = active.any(axis=1) & trainable
        cs, js = np.nonzero(train)
        if len(cs) < 2:
            print(f"| {label} | {lo}-{hi} | {found[0]} | {found[1]} | {found[2]} | - | - | - |")
            continue
        owners = np.array(
            [
                reference_owner(ref, starts[a] / SR, active[a, :, b], c.timing)[0]
                for a, b in zip(cs, js)
            ]
        )
        act = active > 0
        alone = (act & (act.sum(axis=2, keepdims=True) == 1)).sum(axis=1) * c.timing.step
        solo = (alone >= MIN_SOLO_SECONDS)[cs, js]
        u = _unit(emb[cs, js].astype(np.float64))
        diff, same = [], []
        for chunk in np.unique(cs):
            idx = np.flatnonzero((cs == chunk) & solo)
            for p, a in enumerate(idx):
                for b in idx[p + 1 :]:
                    (same if owners[a] == owners[b] else diff).append(np.linalg.norm(u[a] - u[b]))
        different = f"{min(diff):.2f} / {np.quantile(diff, 0.1):.2f}" if diff else "- / -"
        pairs = f"{different}, {np.median(same):.2f} ({len(same)})" if same else f"{different}, -"
        dist, ratio = closest_voices(emb[cs, js], owners)
        ok = np.isfinite(gemb[cs, js]).all(axis=1)
        _, gratio = closest_voices(gemb[cs, js][ok], owners[ok])
        labels = default_labels(c, active, emb, trainable)
        index = {(int(a), int(b)): k for k, (a, b) in enumerate(zip(cs, js))}
        offsets = reconstruct.chunk_frame_offsets(starts / SR, c.timing)
        links = Counter()
        for chunk in range(len(starts) - 1):
            shift = int(offsets[chunk + 1] - offsets[chunk])
            for j, k in enumerate(match_anchor(active[chunk + 1], active[chunk], shift)):
                a, b = index.get((chunk, int(k))), index.get((chunk + 1, j))
                if k < 0 or a is None or b is None:
                    continue
                links["all"] += 1
                if labels[a] != labels[b]:
                    links["across"] += 1
                    links["same voice"] += owners[a] == owners[b]
        print(
            f"| {label} | {lo if lo == hi else f'{lo}-{hi}'} | {found[0]} | {found[1]} | {found[2]} "
            f"| {pairs} "
            f"| {dist:.2f} ({ratio:.2f}), {gratio:.2f} "
            f"| {links['across']} ({links['same voice']}) / {links['all']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
