"""Local speakers to clusters, two speakers of one chunk never to the same one.

segmentation-3.0 tells that the (up to three) local speakers active in one
10 s chunk are different people. Each assigned on its own to its nearest
centroid, two of them can land on one cluster: the reconstruction then keeps
one of the two overlapping voices and the other's speech is missed (or given
to the wrong speaker). Assigned per chunk to distinct clusters (the linear
assignment of most summed cosine similarity), they cannot. pyannote.audio
calls this its constrained assignment and leaves it off for 3.1's pipeline;
saywho's default pipeline takes it (docs/diarization_quality.md, issue 25).
"""

from __future__ import annotations

import numpy as np

from .vbx import _best_assignment


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows of the last axis scaled to unit length."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def assign_distinct(
    embeddings: np.ndarray, active: np.ndarray, centroids: np.ndarray
) -> np.ndarray:
    """Cluster of each local speaker [C, S] (-2 where not active) from its
    embedding [C, S, D] (NaN rows: none) and whether it is active [C, S].

    Within a chunk the active speakers get distinct clusters while there are
    clusters enough; a speaker left over (more active speakers than clusters)
    and one without an embedding takes the nearest cluster (the first one
    when it has no embedding), as an unconstrained assignment would.
    """
    # float32 as the embeddings: one copy of them, not two, on a long file
    x = np.asarray(embeddings, dtype=np.float32)
    finite = np.isfinite(x).all(axis=2)
    x = np.where(finite[:, :, None], x, np.float32(0))
    norms = np.maximum(np.linalg.norm(x, axis=2), 1e-12)
    c = _unit(np.asarray(centroids, dtype=np.float32))
    sim = (np.einsum("csd,kd->csk", x, c) / norms[:, :, None]).astype(np.float64)
    nearest = np.where(finite, np.argmax(sim, axis=2), 0)
    usable = finite & active
    # speakers that cannot take part rank below every real similarity, so they
    # only ever get the clusters nobody else wants (and are overwritten below)
    scores = np.where(usable[:, :, None], sim, -3.0)
    hard = _best_assignment(scores)
    hard = np.where(usable & (hard >= 0), hard, nearest)
    return np.where(active, hard, -2)
