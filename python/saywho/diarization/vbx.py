"""VBx clustering on a PLDA: how pyannote's speaker-diarization-community-1 groups speakers.

The embeddings of long enough clean speech are first grouped by the same
centroid-linkage AHC as 3.1 (cut at ``threshold`` on unit vectors); that
grouping, softened, starts VBx (Landini et al., "Bayesian HMM clustering of
x-vector sequences (VBx) in speaker diarization", 2022, without the HMM):
a Gaussian mixture over the embeddings mapped into the PLDA's latent space,
in which each speaker is a latent mean with a prior of between-class
covariance ``phi`` and the within-class covariance is the identity. Its
variational updates shrink the weight of redundant speakers towards zero,
which is how the number of speakers is chosen. ``Fa`` scales the data's
statistics, ``Fb`` the speakers' prior (more ``Fb``, fewer speakers).

Everything here is float64 NumPy: the matrices are [embeddings x 128] and
[speakers x 128], cheap next to the networks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._internal.native import _core
from .clustering import cluster_embeddings, cut_by_distance, linkage

LDA_DIMENSION = 128  # pyannote keeps the first 128 PLDA dimensions
INIT_SMOOTHING = 7.0  # softmax temperature that turns the AHC labels into responsibilities
MAX_ITERS = 20  # community-1 runs at most 20 VB iterations
EPSILON = 1e-4  # ... and stops when the ELBO gains less than this
KEEP_WEIGHT = 1e-7  # speakers whose prior weight is below this are dropped
MIN_ACTIVE_RATIO = 0.2  # clean speech a (chunk, speaker) needs to join the clustering


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _load_npz(path: Path, keys: dict[str, tuple]) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as z:
            out = {k: np.asarray(z[k], dtype=np.float64) for k in keys if k in z.files}
    except (OSError, ValueError) as e:
        raise _core.ModelError(f"{path}: not a readable .npz file ({e})") from None
    for k, shape in keys.items():
        if k not in out:
            raise _core.ModelError(f"{path}: no array {k!r} (it holds the PLDA's {k})")
        if len(out[k].shape) != len(shape) or any(
            want is not None and got != want for got, want in zip(out[k].shape, shape)
        ):
            raise _core.ModelError(f"{path}: array {k!r} has shape {out[k].shape}, not {shape}")
        if not np.isfinite(out[k]).all():
            raise _core.ModelError(f"{path}: array {k!r} is not finite")
    return out


@dataclass
class PLDA:
    """The x-vector transform and PLDA of pyannote's community-1.

    ``xvec_transform.npz``: mean1 [D], lda [D, L], mean2 [L] (centre,
    length-normalise, LDA, centre, length-normalise); ``plda.npz``: mu [L],
    tr [L, L], psi [L] (the PLDA's mean, its whitening transform, and the
    between-class variances in the whitened space).
    """

    mean1: np.ndarray
    lda: np.ndarray
    mean2: np.ndarray
    mu: np.ndarray
    transform: np.ndarray  # [L, L]: rows are the latent axes, largest phi first
    phi: np.ndarray  # [L]: between-class variance along each axis, descending
    dimension: int = LDA_DIMENSION

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> PLDA:
        """From a folder holding xvec_transform.npz and plda.npz (community-1's plda/)."""
        root = Path(folder)
        x = _load_npz(root / "xvec_transform.npz", {"mean1": (None,), "lda": (None, None)})
        x.update(_load_npz(root / "xvec_transform.npz", {"mean2": (x["lda"].shape[1],)}))
        if x["mean1"].shape[0] != x["lda"].shape[0]:
            raise _core.ModelError(
                f"{root / 'xvec_transform.npz'}: mean1 has {x['mean1'].shape[0]} values "
                f"but lda {x['lda'].shape[0]} rows"
            )
        lat = x["lda"].shape[1]
        p = _load_npz(root / "plda.npz", {"mu": (lat,), "tr": (lat, lat), "psi": (lat,)})
        if not (p["psi"] > 0).all():
            raise _core.ModelError(f"{root / 'plda.npz'}: psi (variances) must be positive")
        # pyannote rebuilds the within-class W = (tr' tr)^-1 and between-class
        # B = (tr' diag(1/psi) tr)^-1 and solves B v = lambda W v. With
        # T = tr, that is T^-1 diag(psi) T^-T v = lambda T^-1 T^-T v, whose
        # solutions are lambda = psi_i and v = the i-th row of T (already
        # W-normalised). So the generalised eigenproblem is a sort of tr's
        # rows by psi, done here exactly (tests/vbx_reference.py solves it).
        order = np.argsort(-p["psi"], kind="stable")
        return cls(
            mean1=x["mean1"],
            lda=x["lda"],
            mean2=x["mean2"],
            mu=p["mu"],
            transform=p["tr"][order],
            phi=p["psi"][order],
            dimension=min(LDA_DIMENSION, lat),
        )

    @property
    def input_dimension(self) -> int:
        return self.mean1.shape[0]

    def project(self, embeddings: np.ndarray) -> np.ndarray:
        """[n, D] speaker embeddings -> [n, dimension] points of the PLDA's latent space."""
        x = np.asarray(embeddings, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.input_dimension:
            raise _core.OptionError(
                f"the PLDA takes [n, {self.input_dimension}] embeddings, not {list(x.shape)}"
            )
        x = np.sqrt(self.lda.shape[0]) * _unit(x - self.mean1)
        x = np.sqrt(self.lda.shape[1]) * _unit(x @ self.lda - self.mean2)
        return (x - self.mu) @ self.transform[: self.dimension].T


def _logsumexp(z: np.ndarray) -> np.ndarray:
    top = z.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(z - top).sum(axis=1, keepdims=True)))[:, 0]


def vbx(
    x: np.ndarray,
    phi: np.ndarray,
    gamma: np.ndarray,
    fa: float,
    fb: float,
    max_iters: int = MAX_ITERS,
    epsilon: float = EPSILON,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Variational Bayes over a mixture of speakers (VBx without the HMM).

    x [T, D] PLDA features; phi [D] between-class variances; gamma [T, S] the
    starting responsibilities. Returns the responsibilities [T, S], the
    speakers' prior weights [S] and the ELBO after each iteration. The
    equation numbers are the paper's.
    """
    x = np.asarray(x, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    d = x.shape[1]
    s = gamma.shape[1]
    weights = np.full(s, 1.0 / s)
    const = -0.5 * (np.einsum("td,td->t", x, x) + d * np.log(2 * np.pi))  # (23)'s per-frame term
    rho = x * np.sqrt(phi)  # (18)
    ratio = fa / fb
    elbos: list[float] = []
    for it in range(max_iters):
        # each speaker's posterior: precision-scaled mean alpha and variance inv_l (16, 17)
        inv_l = 1.0 / (1.0 + ratio * gamma.sum(axis=0)[:, None] * phi)
        alpha = ratio * inv_l * (gamma.T @ rho)
        log_p = fa * (rho @ alpha.T - 0.5 * ((inv_l + alpha * alpha) @ phi) + const[:, None])
        z = log_p + np.log(weights + 1e-8)
        marginal = _logsumexp(z)
        gamma = np.exp(z - marginal[:, None])
        weights = gamma.sum(axis=0)
        weights /= weights.sum()
        elbo = marginal.sum() + fb * 0.5 * np.sum(np.log(inv_l) - inv_l - alpha * alpha + 1)  # (25)
        elbos.append(float(elbo))
        if it > 0 and elbo - elbos[-2] < epsilon:
            break
    return gamma, weights, elbos


def initial_responsibilities(labels: np.ndarray, smoothing: float = INIT_SMOOTHING) -> np.ndarray:
    """One-hot AHC labels softened: softmax(smoothing * one_hot) per row."""
    k = int(labels.max()) + 1
    onehot = np.zeros((len(labels), k))
    onehot[np.arange(len(labels)), labels] = 1.0
    if smoothing < 0:
        return onehot
    e = np.exp(smoothing * (onehot - 1.0))  # shifted by the row maximum, 1
    return e / e.sum(axis=1, keepdims=True)


def ahc_labels(embeddings: np.ndarray, threshold: float) -> np.ndarray:
    """Centroid-linkage AHC of unit embeddings cut at ``threshold``, labels 0..k-1."""
    unit = _unit(np.asarray(embeddings, dtype=np.float64))
    ones = np.ones(len(unit))
    return cut_by_distance(linkage(unit, ones), ones, threshold)


def _best_assignment(scores: np.ndarray) -> np.ndarray:
    """Per chunk, local speakers [C, S] -> distinct clusters maximising the
    summed score (a linear assignment; -2 where a speaker gets none).

    With S speakers, an optimal assignment gives each speaker one of its S
    best clusters (any other choice could be swapped for a free better one),
    so only those combinations are tried, all chunks at once.
    """
    c, s, k = scores.shape
    out = np.full((c, s), -2, dtype=np.int64)
    if k == 0:
        return out
    top = min(s, k)
    best = np.argsort(-scores, axis=2, kind="stable")[:, :, :top]  # [C, S, top]
    # every way of choosing, per speaker, one of its top columns or none
    choices = np.array(np.meshgrid(*[np.arange(top + 1)] * s, indexing="ij")).reshape(s, -1).T
    picked = (choices < top).sum(axis=1)
    choices = choices[picked == top]  # as many pairs as linear_sum_assignment makes
    rows = np.arange(c)[:, None]
    total = np.zeros((c, len(choices)))
    cols = np.full((c, len(choices), s), -1, dtype=np.int64)
    for j in range(s):
        use = choices[:, j] < top
        col = best[:, j, np.minimum(choices[:, j], top - 1)]  # [C, P]
        cols[:, :, j] = np.where(use[None, :], col, -1)
        total += np.where(use[None, :], scores[rows, j, col], 0.0)
    # combinations that give one cluster to two speakers are not assignments
    for a in range(s):
        for b in range(a + 1, s):
            clash = (cols[:, :, a] == cols[:, :, b]) & (cols[:, :, a] >= 0)
            total[clash] = -np.inf
    pick = np.argmax(total, axis=1)
    chosen = cols[np.arange(c), pick]
    return np.where(chosen >= 0, chosen, -2)


class VBxClustering:
    """community-1's clustering, for ``Diarizer(clustering=...)``.

    ``threshold`` cuts the starting AHC, ``fa`` and ``fb`` drive VBx (the
    pipeline's config.yaml gives all three). When the speakers VBx keeps are
    fewer than ``min_speakers``, more than ``max_speakers`` or not
    ``num_speakers``, the embeddings are re-clustered to that count: pyannote
    uses k-means there; saywho cuts its AHC dendrogram at the count (no
    scikit-learn), and, like pyannote, then assigns without the one
    speaker-one cluster constraint.
    """

    def __init__(self, plda: PLDA, threshold: float = 0.6, fa: float = 0.07, fb: float = 0.8):
        for name, value in (("threshold", threshold), ("Fa", fa), ("Fb", fb)):
            if not (isinstance(value, (int, float)) and value > 0):
                raise _core.OptionError(f"VBx {name} must be a positive number, not {value!r}")
        self.plda = plda
        self.threshold = float(threshold)
        self.fa = float(fa)
        self.fb = float(fb)

    def train_mask(self, embeddings: np.ndarray, active: np.ndarray) -> np.ndarray:
        """[C, S]: (chunk, speaker) pairs with a finite embedding and at least
        MIN_ACTIVE_RATIO of the chunk's frames spoken alone."""
        clean = (active * (active.sum(axis=2, keepdims=True) == 1)).sum(axis=1)
        return (clean >= MIN_ACTIVE_RATIO * active.shape[1]) & np.isfinite(embeddings).all(axis=2)

    def __call__(
        self,
        embeddings: np.ndarray,
        active: np.ndarray,
        num_speakers: int | None,
        min_speakers: int,
        max_speakers: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """embeddings [C, S, D] (NaN where none), binarised activity [C, F, S]
        -> (cluster of each local speaker [C, S], -2 for none; centroids [K, D])."""
        c, s, d = embeddings.shape
        if d != self.plda.input_dimension:
            raise _core.ModelError(
                f"the PLDA expects {self.plda.input_dimension}-dimensional embeddings, "
                f"the embedding model gives {d}"
            )
        train = self.train_mask(embeddings, active)
        x = embeddings[train].astype(np.float64)
        if len(x) < 2:
            hard = np.zeros((c, s), dtype=np.int64)
            finite = embeddings[np.isfinite(embeddings).all(axis=2)]
            rows = x if len(x) else finite
            centroid = rows.mean(axis=0, keepdims=True) if len(rows) else np.zeros((1, d))
            return hard, centroid.astype(np.float32)
        labels = ahc_labels(x, self.threshold)
        gamma, weights, _ = vbx(
            self.plda.project(x),
            self.plda.phi[: self.plda.dimension],
            initial_responsibilities(labels),
            self.fa,
            self.fb,
        )
        resp = gamma[:, weights > KEEP_WEIGHT]
        centroids = (resp.T @ x) / resp.sum(axis=0)[:, None]
        constrained = True
        k = len(centroids)
        target = num_speakers
        if target is None and k < min_speakers:
            target = min_speakers
        elif target is None and k > max_speakers:
            target = int(max_speakers)
        if target is not None and target != k:
            found = cluster_embeddings(
                x.astype(np.float32),
                threshold=self.threshold,
                min_cluster_size=1,
                num_clusters=min(target, len(x)),
            )
            centroids = np.stack(
                [x[found.labels == j].mean(axis=0) for j in range(found.labels.max() + 1)]
            )
            constrained = False
        scores = 1.0 + np.einsum(
            "csd,kd->csk",
            np.nan_to_num(_unit(embeddings.astype(np.float64))),
            _unit(centroids),
        )  # 2 - cosine distance, as pyannote's soft clusters
        finite = np.isfinite(embeddings).all(axis=2)
        if constrained:
            floor = scores[finite].min() - 1.0 if finite.any() else -1.0
            scores[~finite] = floor
            scores[active.sum(axis=1) == 0] = floor  # silent speakers come last
            hard = _best_assignment(scores)
        else:
            hard = np.argmax(scores, axis=2)
        return hard, centroids.astype(np.float32)
