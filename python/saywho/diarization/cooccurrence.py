"""A cluster that speaks to itself is two people: split it.

segmentation-3.0 gives the voices of one 10 s chunk distinct local speakers
(count_bound.py says why that is trusted). When the AHC has merged two
people into one cluster, that cluster's members meet inside the chunks
where the two take turns: two local speakers of one chunk, each speaking
alone for a while, both in the cluster. One person split into two local
speakers happens too, but in a chunk or two (a laugh, a change of tone);
two people merged fill every chunk that holds their exchange.

So a cluster whose members meet that way in at least MIN_SHARE of the
chunks it is heard in (and in MIN_CHUNKS of them) is split in two, by a
two-way spherical k-means started from the meetings themselves (_seeds). The split is kept only if it does what it is for: it
separates the members of at least MIN_SEPARATED of those chunks, each side
is at least a large cluster (min_cluster_size), and the two sides lie
MIN_APART apart, as two voices do (a split of one voice's spread does not). Repeated while a
cluster qualifies, never past ``max_clusters``.

Measured on the development set (docs/diarization_quality.md): the share is
at most 0.08 on a real two-person call and 0.03 on a meeting whose voices
the AHC keeps apart, 0.32 on a four-voice meeting merged into two; with the
share at 0.05, 0.1 or 0.2 the same splits are made (the check on the split
refuses the others), so 0.1 leaves room both ways.
"""

from __future__ import annotations

import numpy as np

MIN_SOLO_SECONDS = 1.0  # a local speaker counts when it speaks alone this long
MIN_SHARE = 0.1
MIN_CHUNKS = 5
MIN_SEPARATED = 0.8
# how far apart (unit vectors, Euclidean) the two sides' mean directions
# must lie: CAM++'s different voices lie 0.6-1.4 apart, the splits taken on
# the development set 0.89-1.06, those refused 0.46-0.49 (and one voice's
# noise split at random, 0.2)
MIN_APART = 0.7
KMEANS_ROUNDS = 10


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _meetings(labels, chunk, solo, cluster) -> list[np.ndarray]:
    """Per chunk where two or more solo members of ``cluster`` meet, their
    indices."""
    mine = np.flatnonzero((labels == cluster) & solo)
    if len(mine) < 2:
        return []
    order = np.argsort(chunk[mine], kind="stable")
    mine = mine[order]
    cuts = np.flatnonzero(np.diff(chunk[mine])) + 1
    return [g for g in np.split(mine, cuts) if len(g) >= 2]


def _seeds(unit: np.ndarray, meetings: list[np.ndarray], idx: np.ndarray) -> np.ndarray:
    """Two starting centres from every meeting at once: the members of the
    meeting that lie farthest apart orient the others (in each meeting the
    member nearer the first side joins it, the one nearer the second the
    other), and each side's mean is a centre. One odd embedding cannot pull
    a whole side, as a single pair of seeds could."""
    a, b = min(
        ((i, j) for g in meetings for i in g for j in g if i < j),
        key=lambda p: float(unit[p[0]] @ unit[p[1]]),
    )
    lean = unit @ (unit[a] - unit[b])
    first = [g[np.argmax(lean[g])] for g in meetings]
    second = [g[np.argmin(lean[g])] for g in meetings]
    return _unit(np.stack([unit[first].mean(axis=0), unit[second].mean(axis=0)]))


def _two_means(unit: np.ndarray, centres: np.ndarray) -> np.ndarray:
    side = np.zeros(len(unit), dtype=np.int64)
    for _ in range(KMEANS_ROUNDS):
        new = np.argmax(unit @ centres.T, axis=1)
        if (new == side).all() and _ > 0:
            break
        side = new
        if side.min() == side.max():
            break
        centres = _unit(np.stack([unit[side == s].mean(axis=0) for s in (0, 1)]))
    return side


def split_cooccurring(
    points: np.ndarray,
    labels: np.ndarray,
    chunk: np.ndarray,
    solo: np.ndarray,
    min_size: int,
    max_clusters: float = np.inf,
) -> np.ndarray:
    """Cluster labels [n] of ``points`` [n, d] (the clustering's training
    embeddings, ``chunk`` [n] the chunk each comes from, ``solo`` [n] whether
    it speaks alone MIN_SOLO_SECONDS there) with every cluster that meets
    itself split (module doc)."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    chunk = np.asarray(chunk)
    solo = np.asarray(solo, dtype=bool)
    unit = _unit(points)
    tried: set[tuple[int, ...]] = set()
    while labels.max() + 1 < max_clusters:
        best = None
        for q in range(labels.max() + 1):
            meetings = _meetings(labels, chunk, solo, q)
            heard = len(np.unique(chunk[labels == q]))
            share = len(meetings) / max(heard, 1)
            members = tuple(np.flatnonzero(labels == q))
            if len(meetings) >= MIN_CHUNKS and share >= MIN_SHARE and members not in tried:
                if best is None or share > best[0]:
                    best = (share, q, meetings, members)
        if best is None:
            return labels
        _, q, meetings, members = best
        tried.add(members)
        idx = np.asarray(members)
        side = _two_means(unit[idx], _seeds(unit, meetings, idx))
        where = dict(zip(idx.tolist(), side.tolist()))
        separated = np.mean([len({where[i] for i in g}) == 2 for g in meetings])
        sizes = np.bincount(side, minlength=2)

        if separated < MIN_SEPARATED or sizes.min() < min_size:
            continue
        centres = _unit(np.stack([unit[idx[side == k]].mean(axis=0) for k in (0, 1)]))
        if np.linalg.norm(centres[0] - centres[1]) >= MIN_APART:
            labels[idx[side == 1]] = labels.max() + 1
    return labels
