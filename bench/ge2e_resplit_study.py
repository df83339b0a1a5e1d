"""A GE2E second opinion on CAM++'s clusters (issue 39, candidate (a)):
does splitting a cluster whose members GE2E sees as two voices get the
count right where the default does not?

The default runs as it is (CAM++ AHC at its threshold, the count bound, the
co-occurrence split). Then each cluster of at least ``2 * min_cluster_size``
members is looked at again with GE2E's embeddings of the same local speakers
(resemblyzer's encoder over the same segmentation: only the encoder
differs): a two-way spherical k-means on them (started from the two members
lying farthest apart), kept when both sides are large clusters and the two
sides' mean GE2E vectors lie at least ``apart`` apart (GE2E's own AHC merges
below 0.45, clustering.py). ``spread`` asks first that the cluster's CAM++
members lie that far from their mean at the median (where the second encoder
would be needed at all; 0: every large cluster). ``cap`` (0: none) bounds
GE2E's work: only that many members of a cluster, evenly spread over time,
are embedded and decide the split; the others then go to the nearer side's
CAM++ mean. Repeated while a cluster splits. Never with a given count:
there the default runs unchanged, so DER with the count given is the
default's. Measured, not taken (docs/diarization_quality.md, "A GE2E second
opinion on CAM++'s clusters").

Over the development set's cached chunks (bench/diarization_dev_set.py fills
them) and GE2E embeddings (bench/count_candidates_study.py caches them
beside the chunks; it finds GE2E's weights in an installed resemblyzer; run
both first):

    python3 bench/ge2e_resplit_study.py --given [--setting "apart=0.7 cap=12"]...
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from diarization_dev_set import (  # noqa: E402
    CHUNKS,
    SavingDiarizer,
    cluster_chunks,
    counts,
    describe,
    dev_set,
    parse,
)

import saywho  # noqa: E402
from saywho.diarization.assignment import assign_distinct  # noqa: E402
from saywho.diarization.clustering import cluster_embeddings  # noqa: E402
from saywho.diarization.count_bound import speakers_vouched_for  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000
KMEANS_ROUNDS = 10


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def two_sides(u):
    """Two-way spherical k-means of unit rows u, from the farthest pair."""
    sim = u @ u.T
    a, b = np.unravel_index(np.argmin(sim), sim.shape)
    centres = u[[a, b]]
    side = np.argmax(u @ centres.T, axis=1)
    for _ in range(KMEANS_ROUNDS):
        if side.min() == side.max():
            break
        centres = _unit(np.stack([u[side == k].mean(axis=0) for k in (0, 1)]))
        new = np.argmax(u @ centres.T, axis=1)
        if (new == side).all():
            break
        side = new
    return side


class GE2EResplit:
    """The default clustering, then GE2E's second opinion (module doc); the
    recording's ``trainable`` and GE2E embeddings are set before each call."""

    def __init__(self, diarizer, apart=0.45, spread=0.0, cap=0):
        self.d, self.apart, self.spread, self.cap = diarizer, apart, spread, int(cap)
        self.trainable = self.ge2e = None
        self.splits = self.looked = self.total = 0
        self.seen = []  # (CAM++ spread, GE2E sides apart) of each cluster looked at

    def __call__(self, embeddings, active, num, lo, hi):
        d = self.d
        train = active.any(axis=1) & self.trainable
        is_active = active.any(axis=1)
        if not train.any():
            return np.where(is_active, 0, -2), np.nanmean(
                embeddings[is_active], axis=0, keepdims=True
            )
        if num is None:
            lo = max(lo, min(speakers_vouched_for(active, self.trainable, d.timing.step), hi))
        x = embeddings[train]
        labels = cluster_embeddings(
            x, d.threshold, d.min_cluster_size, num_clusters=num, min_clusters=lo, max_clusters=hi
        ).labels
        self.splits = 0
        self.total = len(x)
        self.seen = []
        self.embedded = np.zeros(len(x), dtype=bool)
        if num is None:
            labels = d._split_cooccurring(active, train, embeddings, labels, hi)
            labels = self.resplit(x, self.ge2e[train], labels, hi)
        self.looked = int(self.embedded.sum())
        centroids = np.stack([x[labels == k].mean(axis=0) for k in range(labels.max() + 1)])
        return assign_distinct(embeddings, is_active, centroids), centroids

    def resplit(self, x, g, labels, hi):
        min_size = min(self.d.min_cluster_size, max(1, round(0.1 * len(x))))
        ux, ok = _unit(x), np.isfinite(g).all(axis=1)
        queue = list(range(labels.max() + 1))
        while queue and labels.max() + 1 < hi:
            q = queue.pop(0)
            members = np.flatnonzero((labels == q) & ok)
            if len(members) < 2 * min_size:
                continue
            mine = ux[labels == q]
            spread = np.median(np.linalg.norm(mine - _unit(mine.mean(axis=0)), axis=1))
            if spread < self.spread:
                continue
            if self.cap and len(members) > self.cap:
                # a bounded cost: GE2E embeds only ``cap`` members, evenly
                # over the cluster's time order; the rest follow CAM++
                sample = members[np.linspace(0, len(members) - 1, self.cap).round().astype(int)]
            else:
                sample = members
            self.embedded[sample] = True  # the local speakers GE2E must embed
            u = _unit(g[sample])
            side = two_sides(u)
            sizes = np.bincount(side, minlength=2)
            floor = min_size * len(sample) / len(members)
            if sizes.min() < floor:
                self.seen.append((spread, None))
                continue
            means = np.stack([u[side == k].mean(axis=0) for k in (0, 1)])
            self.seen.append((spread, np.linalg.norm(means[0] - means[1])))
            if self.seen[-1][1] < self.apart:
                continue
            if len(sample) < len(members):
                # every member to the nearer side in CAM++, from the sample's sides
                centres = _unit(np.stack([ux[sample[side == k]].mean(axis=0) for k in (0, 1)]))
                side = np.argmax(ux[members] @ centres.T, axis=1)
                if np.bincount(side, minlength=2).min() < min_size:
                    continue
            new = labels.max() + 1
            labels[members[side == 1]] = new
            self.splits += 1
            queue += [q, new]
        return labels


def ge2e_cached(x):
    path = CHUNKS / f"{hashlib.sha256(x.tobytes()).hexdigest()[:16]}-ge2e.npz"
    if not path.exists():
        raise SystemExit(f"{path} is absent: run bench/count_candidates_study.py first")
    with np.load(path) as z:
        return z["embeddings"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", action="append", default=[], help="name=value ... (repeatable)")
    ap.add_argument("--given", action="store_true", help="also run with the count given")
    args = ap.parse_args()
    print(f"{describe()}; 2 threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, 2)
    d = SavingDiarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    print(
        "| recording | setting | count given | found / expected | DER 0 | DER 0.5 s | splits "
        "| GE2E embeds (of all) | clusters looked at: CAM++ spread, GE2E sides apart |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    pooled = {}
    for label, x, ref in dev_set():
        lo_ref, hi_ref = counts(ref)
        expected = str(lo_ref) if lo_ref == hi_ref else f"{lo_ref}-{hi_ref}"
        starts = d._chunk_starts(len(x))
        active, embeddings, trainable, seconds = d._segment_and_embed(x, starts, None)
        ge2e = ge2e_cached(x)
        for setting in ["default"] + args.setting:
            rs = None
            if setting != "default":
                kw = {k: parse(v) for k, v in (p.split("=") for p in setting.split())}
                rs = GE2EResplit(d, **kw)
                rs.trainable, rs.ge2e = trainable, ge2e
            d.clustering = rs
            for num in (None, len({t.speaker for t in ref})) if args.given else (None,):
                if rs is not None:  # a call the clustering is not asked for leaves these at 0
                    rs.splits = rs.looked = rs.total = 0
                    rs.seen = []
                r = cluster_chunks(d, x, starts, (active, embeddings, trainable, seconds), num)
                e0 = diarization_error_rate(ref, r.turns)
                e5 = diarization_error_rate(ref, r.turns, collar=0.5)
                right = lo_ref <= len(r.speakers) <= hi_ref
                p = pooled.setdefault((setting, num is not None), [0.0, 0.0, 0, 0, 0, 0, 0])
                p[0] += e0.der * e0.total
                p[1] += e0.total
                p[2] += right
                p[3] += 1
                p[4] += bool(rs and rs.splits)
                p[5] += rs.looked if rs else 0
                p[6] += rs.total if rs else 0
                seen = (
                    ", ".join(f"{a:.2f} {'-' if b is None else f'{b:.2f}'}" for a, b in rs.seen)
                    if rs and num is None
                    else ""
                )
                print(
                    f"| {label} | {setting} | {num or 'no'} | {len(r.speakers)}/{expected}"
                    f"{'' if right else ' **wrong**'} | {100 * e0.der:.1f} | {100 * e5.der:.1f} "
                    f"| {rs.splits if rs else '-'} | {rs.looked if rs else 0} ({rs.total if rs else 0}) "
                    f"| {seen} |",
                    flush=True,
                )
    for (name, given), (err, total, right, n, where, looked, all_) in pooled.items():
        print(
            f"# {name}, count {'given' if given else 'not given'}: pooled DER 0 "
            f"{100 * err / total:.1f}%, counts right {right}/{n}, GE2E split on {where} "
            f"recordings, GE2E embeds {looked} of {all_} local speakers"
        )


if __name__ == "__main__":
    main()
