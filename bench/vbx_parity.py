"""Prints how far saywho's VBx (saywho/diarization/vbx.py) is from a
transcription of pyannote's (tests/vbx_reference.py) on community-1's real
PLDA, with GE2E embeddings of real speech (1.5 s windows of two_speakers.wav
and jfk.wav): the figures docs/pyannote_pipelines.md quotes.

    SAYWHO_TEST_WEIGHTS=.cache/test-weights python bench/vbx_parity.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import saywho  # noqa: E402
from saywho.diarization.embedding_ge2e import GE2EEncoder  # noqa: E402
from saywho.diarization.vbx import (  # noqa: E402
    PLDA,
    VBxClustering,
    ahc_labels,
    initial_responsibilities,
    vbx,
)
from tests.test_vbx import first_seen, layout  # noqa: E402
from tests.vbx_reference import (  # noqa: E402
    ReferencePLDA,
    reference_ahc,
    reference_cluster_vbx,
    reference_vbx_clustering,
)
from tests.weights import test_weights_root  # noqa: E402


def main() -> None:
    folder = test_weights_root() / "community-1-plda"
    mine, ref = PLDA.load(folder), ReferencePLDA(folder)
    data = REPO / "tests" / "data" / "shared"
    audio = [saywho.load_audio(data / n) for n in ("two_speakers.wav", "jfk.wav")]
    chunks = [a[s : s + 24000] for a in audio for s in range(0, len(a) - 24000 + 1, 8000)]
    emb = GE2EEncoder(test_weights_root() / "resemblyzer-ge2e" / "pretrained.pt")(
        np.stack(chunks)
    ).astype(np.float64)
    signs = np.sign(np.sum(mine.transform * ref.tr, axis=1))
    print(
        f"PLDA: phi max |diff| {np.abs(mine.phi - ref.psi).max():.2e}, axes (up to sign) "
        f"{np.abs(mine.transform - ref.tr * signs[:, None]).max():.2e}"
    )
    x = mine.project(emb)
    print(
        f"projection of {len(emb)} embeddings: max |diff| "
        f"{np.abs(x - ref(emb) * signs[None, :128]).max():.2e} (values up to {np.abs(x).max():.1f})"
    )
    for threshold in (0.5, 0.6):
        a, b = first_seen(ahc_labels(emb, threshold)), first_seen(reference_ahc(emb, threshold))
        g, pi, elbo = vbx(x, mine.phi, initial_responsibilities(a), 0.07, 0.8)
        g2, pi2, elbo2 = reference_cluster_vbx(b, ref(emb), ref.phi, 0.07, 0.8)
        print(
            f"threshold {threshold}: AHC {a.max() + 1} clusters, same partition {bool((a == b).all())}; "
            f"VBx {len(elbo)} iterations (ref {len(elbo2)}), kept {int((pi > 1e-7).sum())}; "
            f"max |diff| gamma {np.abs(g - g2).max():.1e}, pi {np.abs(pi - pi2).max():.1e}, "
            f"ELBO rel {np.max(np.abs(np.subtract(elbo, elbo2)) / np.abs(elbo2)):.1e}"
        )
    e, active = layout(emb)
    for th, fa, fb in ((0.6, 0.07, 0.8), (0.6, 0.07, 0.1), (0.4, 0.07, 0.03)):
        hard_ref, cen_ref, _, _, _ = reference_vbx_clustering(ref, e, active, th, fa, fb)
        hard, cen = VBxClustering(mine, th, fa, fb)(e, active, None, 1, np.inf)
        match = np.argmin(np.abs(cen[:, None] - cen_ref[None]).max(axis=2), axis=1)
        same = np.array_equal(np.where(hard >= 0, match[np.maximum(hard, 0)], hard), hard_ref)
        print(
            f"whole clustering (threshold {th}, Fa {fa}, Fb {fb}): {len(cen)} speakers, "
            f"centroids max |diff| {np.abs(cen - cen_ref[match]).max():.1e}, "
            f"same assignment {same}"
        )


if __name__ == "__main__":
    main()
