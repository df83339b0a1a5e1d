"""Known voices as anchors of the clustering: two named voices are never one
speaker.

``process(known_speakers=...)`` names the speakers the clustering found by
matching their centroids to the clips' embeddings (known_speakers.py). When
the clustering has already merged two of those voices into one speaker, one
name is lost however good the clips are (issue 39: three clips, two names).
So the clips' embeddings go into the clustering first, as anchors: an
anchor is heard when at least MIN_HEARD of the embeddings the clustering is
trained on are nearer to it than to any other anchor and at least as similar
as the known-speaker threshold. Every cluster that holds the embeddings of
two or more heard anchors is split between them, each of its embeddings
going to the anchor it is most similar to. So the count is at least the
number of named voices heard, and a named voice is never merged into
another named voice; unnamed voices cluster as before.
"""

from __future__ import annotations

import numpy as np

# embeddings (one per chunk and local speaker: about a second each with the
# default 1 s step) a voice needs before its anchor counts as heard
MIN_HEARD = 3


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def heard_anchors(points: np.ndarray, anchors: np.ndarray, threshold: float) -> np.ndarray:
    """For each point [n, d], the anchor [a, d] it belongs to (-1: none): its
    most similar anchor (cosine) when that reaches ``threshold`` and that
    anchor is heard (MIN_HEARD points)."""
    sim = _unit(points) @ _unit(anchors).T
    best = np.argmax(sim, axis=1)
    near = sim[np.arange(len(points)), best] >= threshold
    owner = np.where(near, best, -1)
    counts = np.bincount(owner[owner >= 0], minlength=len(anchors))
    return np.where((owner >= 0) & (counts[np.maximum(owner, 0)] >= MIN_HEARD), owner, -1)


def split_by_anchors(
    points: np.ndarray, labels: np.ndarray, anchors: np.ndarray, threshold: float
) -> np.ndarray:
    """Cluster labels [n] (0..k-1) of ``points`` [n, d] with every cluster
    that holds two or more heard anchors split between them (module doc)."""
    labels = np.asarray(labels, dtype=np.int64).copy()
    if len(anchors) < 2 or len(points) == 0:
        return labels
    owner = heard_anchors(points, anchors, threshold)
    heard = np.unique(owner[owner >= 0])
    if len(heard) < 2:
        return labels
    # each heard anchor lives in the cluster holding most of its points
    home = {
        int(j): int(np.bincount(labels[owner == j], minlength=labels.max() + 1).argmax())
        for j in heard
    }
    sim = _unit(points) @ _unit(anchors).T
    fresh = int(labels.max()) + 1
    for cluster in sorted(set(home.values())):
        sharing = [j for j in home if home[j] == cluster]
        if len(sharing) < 2:
            continue
        members = np.flatnonzero(labels == cluster)
        choice = np.argmax(sim[np.ix_(members, sharing)], axis=1)
        # the first anchor keeps the cluster's label, the others get new ones
        for i in range(1, len(sharing)):
            labels[members[choice == i]] = fresh
            fresh += 1
    return np.unique(labels, return_inverse=True)[1]
