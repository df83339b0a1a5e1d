"""pyannote 3.1's agglomerative clustering of speaker embeddings.

Centroid linkage on unit-normalised embeddings, cut where clusters are more
than ``threshold`` apart; clusters smaller than ``min_cluster_size`` join the
large cluster whose centroid is nearest (cosine); when the count of large
clusters falls outside [min_clusters, max_clusters], or num_clusters is
given, the dendrogram is walked away from the threshold until the count of
large clusters fits. The dendrogram comes from the core (csrc/diar/ahc.c),
which matches scipy's linkage(method="centroid").

Memory: the dendrogram needs the n x n distances. Above ``max_points``
embeddings, contiguous blocks of them are first merged, each on its own,
into at most max_points / blocks weighted groups (never across more than
half the threshold), and the groups are clustered with their weights: the
peak stays at max_points^2 floats however long the recording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._internal.native import _core

# pyannote/speaker-diarization-3.1's values are tuned for its ResNet; these
# are saywho's for the GE2E encoder (docs/diarization.md says how).
# the linkage distance (unit embeddings, centroid linkage) at or below which
# two clusters are one speaker
MERGE_DISTANCE_THRESHOLD = 0.45
DEFAULT_MIN_CLUSTER_SIZE = 12
MAX_POINTS = 4000


@dataclass
class Clusters:
    """labels [n] (0..k-1) and the centroid of each cluster [k, d]."""

    labels: np.ndarray
    centroids: np.ndarray


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def linkage(points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """scipy-style centroid-linkage dendrogram [n - 1, 4] of weighted points."""
    # float32 and in place: the n x n matrix is the clustering's whole peak
    p = np.asarray(points, dtype=np.float32)
    sq = np.einsum("ij,ij->i", p, p)
    d2 = p @ p.T
    d2 *= -2.0
    d2 += sq[:, None]
    d2 += sq[None, :]
    np.maximum(d2, 0.0, out=d2)
    np.fill_diagonal(d2, 0.0)
    return _core.ahc_centroid(d2, np.asarray(weights, dtype=np.float64), True)


class _Merger:
    """Applies a dendrogram's merges in order, keeping cluster sizes."""

    def __init__(self, weights: np.ndarray):
        n = len(weights)
        self.parent = np.arange(2 * n - 1)
        self.size = np.concatenate([weights, np.zeros(n - 1)])
        self.n = n

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:
            self.parent[i], i = root, self.parent[i]
        return root

    def merge(self, row: int, a: int, b: int) -> None:
        node = self.n + row
        ra, rb = self.find(a), self.find(b)
        self.parent[ra] = self.parent[rb] = node
        self.size[node] = self.size[ra] + self.size[rb]

    def labels(self) -> np.ndarray:
        roots = np.array([self.find(i) for i in range(self.n)])
        return np.unique(roots, return_inverse=True)[1]


def cut_by_distance(z: np.ndarray, weights: np.ndarray, threshold: float) -> np.ndarray:
    """Flat clusters whose members all joined at or below ``threshold`` (scipy's
    fcluster criterion "distance", which for a non-monotone centroid dendrogram
    looks at the highest merge inside each subtree)."""
    n = len(weights)
    top = np.zeros(2 * n - 1)
    m = _Merger(weights)
    for row, (a, b, h, _) in enumerate(z):
        top[n + row] = max(h, top[int(a)], top[int(b)])
        if top[n + row] <= threshold:
            m.merge(row, int(a), int(b))
    return m.labels()


def cut_after(z: np.ndarray, weights: np.ndarray, merges: int) -> np.ndarray:
    """Flat clusters after the first ``merges`` merges of the dendrogram."""
    m = _Merger(weights)
    for row in range(merges):
        m.merge(row, int(z[row, 0]), int(z[row, 1]))
    return m.labels()


def _large_counts(z: np.ndarray, weights: np.ndarray, min_size: float) -> np.ndarray:
    """large[k]: clusters of weight >= min_size after the first k merges."""
    m = _Merger(weights)
    large = int(np.sum(weights >= min_size))
    out = [large]
    for row, (a, b, _, _) in enumerate(z):
        ra, rb = m.find(int(a)), m.find(int(b))
        large -= int(m.size[ra] >= min_size) + int(m.size[rb] >= min_size)
        m.merge(row, int(a), int(b))
        large += int(m.size[m.n + row] >= min_size)
        out.append(large)
    return np.asarray(out)


def _cluster_weighted(
    points: np.ndarray,
    weights: np.ndarray,
    threshold: float,
    min_cluster_size: int,
    num_clusters: int | None,
    min_clusters: int,
    max_clusters: float,
) -> np.ndarray:
    n = len(points)
    total = float(weights.sum())
    min_size = min(min_cluster_size, max(1, round(0.1 * total)))
    z = linkage(points, weights)
    labels = cut_by_distance(z, weights, threshold)
    sizes = np.bincount(labels, weights=weights)
    large = int(np.sum(sizes >= min_size))
    if num_clusters is None:
        if large < min_clusters:
            num_clusters = min_clusters
        elif large > max_clusters:
            num_clusters = int(max_clusters)
    if num_clusters is not None and large != num_clusters:
        # walk the merges outward from the one nearest the threshold, keeping
        # the cut whose count of large clusters comes nearest the target
        counts = _large_counts(z, weights, min_size)
        best, best_count = n - 1, 1
        for row in np.argsort(np.abs(z[:, 2] - threshold), kind="stable"):
            if z[row, 3] < min_size:
                continue  # this merge cannot change the count of large clusters
            count = counts[row + 1]
            if abs(count - num_clusters) < abs(best_count - num_clusters):
                best, best_count = row + 1, count
            if count == num_clusters:
                break
        labels = cut_after(z, weights, best)
        sizes = np.bincount(labels, weights=weights)
    is_large = sizes >= min_size
    if not is_large.any():
        return np.zeros(n, dtype=np.int64)
    if not is_large.all():
        # each small cluster joins the large one whose centroid is nearest
        centroids = np.stack(
            [
                np.average(points[labels == k], axis=0, weights=weights[labels == k])
                for k in range(len(sizes))
            ]
        )
        big = np.flatnonzero(is_large)
        nearest = big[np.argmax(_unit(centroids) @ _unit(centroids[big]).T, axis=1)]
        labels = np.where(is_large[labels], labels, nearest[labels])
    return np.unique(labels, return_inverse=True)[1]


def _pre_merge(points: np.ndarray, threshold: float, max_points: int):
    """Blocks of contiguous embeddings merged into weighted groups so that at
    most ``max_points`` groups remain; returns (group of each point, group
    centroids, group weights)."""
    n = len(points)
    blocks = -(-n // max_points)
    quota = max(1, max_points // blocks)
    groups = np.empty(n, dtype=np.int64)
    centroids, weights = [], []
    for start in range(0, n, max_points):
        block = points[start : start + max_points]
        ones = np.ones(len(block))
        if len(block) > 1:
            z = linkage(block, ones)
            labels = cut_by_distance(z, ones, threshold / 2)
            if labels.max() + 1 > quota:
                labels = cut_after(z, ones, len(block) - quota)
        else:
            labels = np.zeros(1, dtype=np.int64)
        for k in range(labels.max() + 1):
            members = block[labels == k]
            centroids.append(members.mean(axis=0))
            weights.append(len(members))
        groups[start : start + len(block)] = labels + (len(centroids) - labels.max() - 1)
    return groups, np.stack(centroids), np.asarray(weights, dtype=np.float64)


def cluster_embeddings(
    embeddings: np.ndarray,
    threshold: float = MERGE_DISTANCE_THRESHOLD,
    min_cluster_size: int = DEFAULT_MIN_CLUSTER_SIZE,
    num_clusters: int | None = None,
    min_clusters: int = 1,
    max_clusters: float = np.inf,
    max_points: int = MAX_POINTS,
) -> Clusters:
    """Cluster [n, d] embeddings (rows in time order) the way pyannote 3.1 does."""
    # float32 throughout: on a 4-hour file there are some 30,000 embeddings
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim != 2 or len(x) == 0 or not np.isfinite(x).all():
        raise _core.OptionError("embeddings must be a finite [n, d] array with n >= 1")
    if not threshold > 0:
        raise _core.OptionError(f"threshold must be > 0, not {threshold}")
    if min_cluster_size < 1:
        raise _core.OptionError("min_cluster_size must be at least 1")
    if max_points < 2:
        raise _core.OptionError("max_points must be at least 2")
    n = len(x)
    if n == 1:
        return Clusters(np.zeros(1, dtype=np.int64), x.astype(np.float32))
    unit = _unit(x)
    if n > max_points:
        groups, points, weights = _pre_merge(unit, threshold, max_points)
    else:
        groups, points, weights = np.arange(n), unit, np.ones(n)
    if len(points) == 1:
        labels = np.zeros(n, dtype=np.int64)
    else:
        labels = _cluster_weighted(
            points, weights, threshold, min_cluster_size, num_clusters, min_clusters, max_clusters
        )[groups]
    centroids = np.stack([x[labels == k].mean(axis=0) for k in range(labels.max() + 1)])
    return Clusters(labels, centroids.astype(np.float32))


def assign(embeddings: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each embedding's nearest centroid by cosine (-1 for NaN rows)."""
    x = np.asarray(embeddings, dtype=np.float32)
    ok = np.isfinite(x).all(axis=1)
    out = np.full(len(x), -1, dtype=np.int64)
    if ok.any() and len(centroids):
        # the norm of x does not change its argmax: only the centroids are normalised
        out[ok] = np.argmax(x[ok] @ _unit(np.asarray(centroids, np.float32)).T, axis=1)
    return out
