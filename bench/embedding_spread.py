"""Why a clustering finds too few or too many speakers: how far apart each
true speaker's embeddings lie, for one encoder on the tuning recordings.

Every (chunk, local speaker) embedding the clustering is trained on gets the
reference speaker who speaks most in its active frames (and the share of
those frames that speaker has: its purity). Then, per true speaker: how many
embeddings, their median distance to the speaker's own centroid, and the
distance between centroids (Euclidean of unit vectors, what the AHC's
threshold cuts). A threshold separates two voices only while their
centroids lie further apart than it; a centroid distance under the threshold
merges them whatever min_cluster_size is.

    python3 bench/embedding_spread.py [--encoder campp] [--recording espeak]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from diarization_quality import recordings  # noqa: E402

from saywho import _core  # noqa: E402
from saywho.audio.decode import SAMPLE_RATE  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.diarization.clustering import _unit  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402


def reference_owner(ref, chunk_start: float, active: np.ndarray, timing) -> tuple[str, float]:
    """The reference speaker heard most over a local speaker's active frames."""
    frames = np.flatnonzero(active)
    t = chunk_start + frames * timing.step + timing.duration / 2
    talk: dict[str, int] = {}
    for turn in ref:
        n = int(np.sum((t >= turn.start) & (t < turn.end)))
        if n:
            talk[turn.speaker] = talk.get(turn.speaker, 0) + n
    if not talk:
        return "(silence)", 0.0
    who = max(talk, key=talk.get)
    return who, talk[who] / len(frames)


def spread(label, audio, ref, d: Diarizer) -> None:
    starts = d._chunk_starts(len(audio))
    active, emb, trainable, _ = d._segment_and_embed(audio, starts, None)
    is_active = active.any(axis=1)
    train = is_active & trainable
    cs, js = np.nonzero(train)
    owners, purity = [], []
    for c, j in zip(cs, js):
        who, p = reference_owner(ref, starts[c] / SAMPLE_RATE, active[c, :, j], d.timing)
        owners.append(who)
        purity.append(p)
    owners = np.array(owners)
    x = _unit(emb[cs, js].astype(np.float64))
    names = sorted(set(owners))
    cent = np.stack([_unit(x[owners == n].mean(axis=0, keepdims=True))[0] for n in names])
    print(f"\n{label}: {len(x)} training embeddings (of {int(is_active.sum())} active)")
    print(f"  {'speaker':16} {'n':>4} {'purity':>6} {'to own centroid (median, 90%)':>30}")
    for k, n in enumerate(names):
        sel = owners == n
        dist = np.linalg.norm(x[sel] - cent[k], axis=1)
        print(
            f"  {n:16} {int(sel.sum()):4d} {np.mean(np.array(purity)[sel]):6.2f} "
            f"{np.median(dist):15.3f} {np.quantile(dist, 0.9):14.3f}"
        )
    dc = np.linalg.norm(cent[:, None] - cent[None], axis=2)
    print("  centroid distances:")
    print("  " + " " * 16 + "".join(f"{n[:7]:>8}" for n in names))
    for k, n in enumerate(names):
        print(f"  {n:16}" + "".join(f"{v:8.3f}" for v in dc[k]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="campp")
    ap.add_argument("--recording", default="", help="a word of the recordings' labels")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with (
        _core.Runtime(device="cpu", threads=args.threads) as rt,
        Diarizer(resolve_segmentation(None), resolve_embedding(args.encoder), rt) as d,
    ):
        for label, audio, ref in recordings():
            if args.recording in label:
                spread(label, audio, ref, d)


if __name__ == "__main__":
    main()
