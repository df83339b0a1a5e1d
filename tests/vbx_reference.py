"""A step-by-step NumPy/SciPy transcription of pyannote.audio 4's VBx path,
written from reading its utils/vbx.py (VBx, cluster_vbx, vbx_setup),
core/plda.py (PLDA) and pipelines/clustering.py (VBxClustering), to test
saywho's own implementation (saywho/diarization/vbx.py) against.

It keeps pyannote's route where saywho's differs: the generalised
eigenproblem B v = lambda W v solved by scipy.linalg.eigh, SciPy's
logsumexp, softmax and centroid linkage, and a Hungarian assignment
(scipy.optimize.linear_sum_assignment). Not used by saywho itself.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.cluster.hierarchy import fcluster
from scipy.cluster.hierarchy import linkage as scipy_linkage
from scipy.linalg import eigh
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import logsumexp, softmax


def length_norm(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1)[:, None]


class ReferencePLDA:
    """core/plda.py's PLDA with utils/vbx.py's vbx_setup inside."""

    def __init__(self, folder: Path, lda_dimension: int = 128):
        t = np.load(Path(folder) / "xvec_transform.npz")
        p = np.load(Path(folder) / "plda.npz")
        self.mean1, self.mean2, self.lda = t["mean1"], t["mean2"], t["lda"]
        self.mu = p["mu"]
        tr, psi = p["tr"], p["psi"]
        within = np.linalg.inv(tr.T @ tr)
        between = np.linalg.inv((tr.T / psi) @ tr)
        values, vectors = eigh(between, within)  # ascending
        self.psi = values[::-1]
        self.tr = vectors.T[::-1]
        self.lda_dimension = lda_dimension

    @property
    def phi(self) -> np.ndarray:
        return self.psi[: self.lda_dimension]

    def xvec(self, x: np.ndarray) -> np.ndarray:
        inner = np.sqrt(self.lda.shape[0]) * length_norm(x - self.mean1)
        return np.sqrt(self.lda.shape[1]) * length_norm(self.lda.T.dot(inner.T).T - self.mean2)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        y = self.xvec(x)
        return (y - self.mu).dot(self.tr.T)[:, : self.lda_dimension]


def reference_vbx(x, phi, fa, fb, gamma, max_iters=20, epsilon=1e-4):
    """utils/vbx.py's VBx, given a starting gamma and a flat prior."""
    d = x.shape[1]
    pi = np.ones(gamma.shape[1]) / gamma.shape[1]
    g = -0.5 * (np.sum(x**2, axis=1, keepdims=True) + d * np.log(2 * np.pi))
    rho = x * np.sqrt(phi)
    history = []
    for ii in range(max_iters):
        inv_l = 1.0 / (1 + fa / fb * gamma.sum(axis=0, keepdims=True).T * phi)
        alpha = fa / fb * inv_l * gamma.T.dot(rho)
        log_p = fa * (rho.dot(alpha.T) - 0.5 * (inv_l + alpha**2).dot(phi) + g)
        lpi = np.log(pi + 1e-8)
        log_px = logsumexp(log_p + lpi, axis=-1)
        gamma = np.exp(log_p + lpi - log_px[:, None])
        pi = np.sum(gamma, axis=0)
        pi = pi / pi.sum()
        elbo = np.sum(log_px) + fb * 0.5 * np.sum(np.log(inv_l) - inv_l - alpha**2 + 1)
        history.append(elbo)
        if ii > 0 and elbo - history[-2] < epsilon:
            break
    return gamma, pi, history


def reference_cluster_vbx(ahc, fea, phi, fa, fb, max_iters=20, init_smoothing=7.0):
    q = np.zeros((len(ahc), ahc.max() + 1))
    q[range(len(ahc)), ahc.astype(int)] = 1.0
    q = softmax(q * init_smoothing, axis=1)
    return reference_vbx(fea, phi, fa, fb, q, max_iters=max_iters)


def reference_ahc(train: np.ndarray, threshold: float) -> np.ndarray:
    unit = train / np.linalg.norm(train, axis=1, keepdims=True)
    dendrogram = scipy_linkage(unit, method="centroid", metric="euclidean")
    labels = fcluster(dendrogram, threshold, criterion="distance") - 1
    return np.unique(labels, return_inverse=True)[1]


def reference_vbx_clustering(plda, embeddings, active, threshold=0.6, fa=0.07, fb=0.8):
    """VBxClustering.__call__ without a speaker count: (hard [C, S], centroids,
    gamma, pi, train rows)."""
    num_frames = active.shape[1]
    single = np.sum(active, axis=2, keepdims=True) == 1
    clean = np.sum(active * single, axis=1)
    keep = (clean >= 0.2 * num_frames) & ~np.any(np.isnan(embeddings), axis=2)
    chunk_idx, speaker_idx = np.where(keep)
    train = embeddings[chunk_idx, speaker_idx].astype(np.float64)
    ahc = reference_ahc(train, threshold)
    gamma, pi, _ = reference_cluster_vbx(ahc, plda(train), plda.phi, fa, fb)
    w = gamma[:, pi > 1e-7]
    centroids = w.T @ train / w.sum(0, keepdims=True).T
    c, s, d = embeddings.shape
    soft = 2 - cdist(embeddings.reshape(-1, d), centroids, metric="cosine").reshape(c, s, -1)
    soft[np.sum(active, axis=1) == 0] = np.nanmin(soft) - 1.0
    soft = np.nan_to_num(soft, nan=np.nanmin(soft))
    hard = np.full((c, s), -2, dtype=np.int64)
    for i, cost in enumerate(soft):
        rows, cols = linear_sum_assignment(cost, maximize=True)
        hard[i, rows] = cols
    return hard, centroids, gamma, pi, train
