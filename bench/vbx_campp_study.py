"""VBx on CAM++ embeddings with a PLDA estimated from the recording itself
(issue 39, candidate (b)): does it get the count right where the default
AHC does not?

No labelled speakers exist here to fit a PLDA for CAM++ (community-1's is
for its ResNet), so each recording supplies its own, without labels, from
what segmentation-3.0 tells for certain:

- within-speaker scatter: one local speaker continued across two chunks
  ``lag`` steps or more apart (its activity in the frames the two chunks
  share agrees: intersection over union at least MATCH_IOU, and at least
  MATCH_SECONDS spoken) is one person: half the scatter of the differences
  of their embeddings is the within-speaker covariance W;
- the total covariance T of the recording's embeddings; between-speaker
  B = T - W (clipped at zero).

Both are estimated in the recording's first ``dims`` principal directions
(a 30 s excerpt has some 40 embeddings: 192 dimensions cannot be estimated),
W shrunk towards its mean variance by ``shrink``. The PLDA is then W's
whitening followed by B's eigenvectors (phi: B's variances there), the form
vbx.PLDA has, and VBx (vbx.vbx, community-1's own iteration) starts from
the AHC cut at ``init`` on unit vectors, Fa / Fb as given. The speakers VBx
keeps (prior weight above vbx.KEEP_WEIGHT and ``min_share``) are the count.
A count below the count bound (count_bound.py) falls back to the default's
AHC; a given count never runs VBx (the default's path: DER with the count
given is the default's). Local speakers go to the clusters by the
default's constrained assignment. Measured and not taken
(docs/diarization_quality.md, "VBx on CAM++ with a PLDA from the recording
itself").

Runs over the development set's cached chunks (bench/diarization_dev_set.py:
run that first, it fills .cache/bench-audio/dev-set-chunks), the default
first, then each setting; ``--within`` instead compares the label-free
within-speaker scatter with the one the references give (bench only):

    python3 bench/vbx_campp_study.py --cached --given [--setting "init=0.7 fa=0.8 fb=30"]...
    python3 bench/vbx_campp_study.py --cached --within --setting "dims=16 lag=6"
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
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
from saywho.diarization import reconstruct  # noqa: E402
from saywho.diarization.assignment import assign_distinct  # noqa: E402
from saywho.diarization.clustering import cluster_embeddings  # noqa: E402
from saywho.diarization.count_bound import speakers_vouched_for  # noqa: E402
from saywho.diarization.vbx import KEEP_WEIGHT, ahc_labels, initial_responsibilities, vbx  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

SR = 16000
MATCH_IOU = 0.8
MATCH_SECONDS = 1.5


def _unit(x):
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def continuation_pairs(active, train, offsets, lag, frame_step):
    """(chunk a, speaker a, chunk b, speaker b) of one local speaker continued
    from chunk a into chunk b, ``lag`` or more chunks later (module doc)."""
    c, f, s = active.shape
    need = MATCH_SECONDS / frame_step
    out = []
    for a in range(c):
        for b in range(a + lag, c):
            shift = int(offsets[b] - offsets[a])
            if shift >= f - need:
                break
            x = active[a, shift:, :]  # [f - shift, S]
            y = active[b, : f - shift, :]
            for i in range(s):
                if not train[a, i]:
                    continue
                for j in range(s):
                    if not train[b, j]:
                        continue
                    both = np.sum(x[:, i] & y[:, j])
                    either = np.sum(x[:, i] | y[:, j])
                    if both >= need and both >= MATCH_IOU * either:
                        out.append((a, i, b, j))
    return out


class SelfPLDAVBx:
    """The clustering callable for Diarizer(clustering=...) (module doc);
    ``trainable`` and ``offsets`` of the recording are set before each call."""

    def __init__(self, init=0.6, fa=0.3, fb=5.0, dims=16, shrink=0.3, lag=3, min_share=0.0):
        self.init, self.fa, self.fb = init, fa, fb
        self.dims, self.shrink, self.lag, self.min_share = int(dims), shrink, int(lag), min_share
        self.trainable = self.offsets = None
        self.frame_step = 0.0
        self.stats = {}
        self.threshold, self.min_cluster_size = 0.76, 12  # set from the Diarizer below

    def plda(self, x, pairs_idx):
        """(features [n, p], phi [p]) of unit embeddings x [n, D]."""
        mean = x.mean(axis=0)
        xc = x - mean
        p = max(2, min(self.dims, len(x) // 3))
        _, _, vt = np.linalg.svd(xc, full_matrices=False)
        basis = vt[:p]
        y = xc @ basis.T
        total = np.cov(y, rowvar=False, bias=True)
        if len(pairs_idx):
            d = y[pairs_idx[:, 0]] - y[pairs_idx[:, 1]]
            within = d.T @ d / (2 * len(d))
        else:
            within = total / 2
        within = (1 - self.shrink) * within + self.shrink * np.trace(within) / p * np.eye(p)
        w_val, w_vec = np.linalg.eigh(within)
        whiten = w_vec / np.sqrt(np.maximum(w_val, 1e-9))  # y @ whiten: W -> I
        between = whiten.T @ (total - within) @ whiten
        phi, vec = np.linalg.eigh((between + between.T) / 2)
        order = np.argsort(-phi)
        phi, vec = np.maximum(phi[order], 1e-6), vec[:, order]
        return y @ whiten @ vec, phi

    def __call__(self, embeddings, active, num, lo, hi):
        c, s, dim = embeddings.shape
        is_active = active.any(axis=1)
        train = is_active & self.trainable & np.isfinite(embeddings).all(axis=2)
        x = _unit(embeddings[train].astype(np.float64))
        if len(x) == 0:  # as the default: one speaker
            hard = np.where(is_active, 0, -2)
            return hard, np.nanmean(embeddings[is_active], axis=0, keepdims=True)
        where = -np.ones((c, s), dtype=np.int64)
        where[train] = np.arange(len(x))
        if num is None:
            lo = max(lo, min(speakers_vouched_for(active, self.trainable, self.frame_step), hi))
        labels = None
        if len(x) >= 6 and num is None:
            pairs = continuation_pairs(active, train, self.offsets, self.lag, self.frame_step)
            idx = np.array([(where[a, i], where[b, j]) for a, i, b, j in pairs], dtype=np.int64)
            feats, phi = self.plda(x, idx.reshape(-1, 2))
            init = ahc_labels(x, self.init)
            gamma, weights, _ = vbx(feats, phi, initial_responsibilities(init), self.fa, self.fb)
            keep = weights > max(KEEP_WEIGHT, self.min_share)
            labels = np.unique(np.argmax(gamma[:, keep], axis=1), return_inverse=True)[1]
            self.stats = {"pairs": len(idx), "init": int(init.max() + 1), "vbx": int(keep.sum())}
            k = labels.max() + 1
            if not lo <= k <= hi:
                labels = None
        if labels is None:
            # the default's own AHC (its threshold and min_cluster_size, raw
            # embeddings, raw centroids): with a count given, exactly what the
            # default does, so DER with the count cannot move
            found = cluster_embeddings(
                embeddings[train],
                threshold=self.threshold,
                min_cluster_size=self.min_cluster_size,
                num_clusters=num,
                min_clusters=lo,
                max_clusters=hi,
            )
            centroids = found.centroids
        else:
            raw = embeddings[train]
            centroids = np.stack([raw[labels == k].mean(axis=0) for k in range(labels.max() + 1)])
        return assign_distinct(embeddings, is_active, centroids), centroids.astype(np.float32)


def reference_labels(active, starts, timing, ref):
    """[C, S] index of the reference speaker who holds at least 80% of each
    local speaker's active frames (-1: none does): a bench-only check."""
    names = sorted({t.speaker for t in ref})
    c, f, s = active.shape
    out = -np.ones((c, s), dtype=np.int64)
    for k in range(c):
        times = starts[k] / SR + (np.arange(f) + 0.5) * timing.step
        talks = np.stack(
            [
                np.any(
                    [(t.start <= times) & (times < t.end) for t in ref if t.speaker == n], axis=0
                )
                for n in names
            ],
            axis=1,
        )  # [F, speakers]
        for i in range(s):
            on = active[k, :, i].astype(bool)
            if on.sum() == 0:
                continue
            share = talks[on].mean(axis=0)
            if share.max() >= 0.8:
                out[k, i] = int(np.argmax(share))
    return out


def within_check(d, x, ref, vb):
    """How the label-free within-speaker scatter compares with the one the
    reference labels give, in the same principal directions: (trace ratio,
    pairs, pairs whose two sides are one reference speaker)."""
    starts = d._chunk_starts(len(x))
    active, embeddings, trainable, _ = d._segment_and_embed(x, starts, None)
    train = active.any(axis=1) & trainable & np.isfinite(embeddings).all(axis=2)
    who = reference_labels(active, starts, d.timing, ref)
    offsets = reconstruct.chunk_frame_offsets(starts / SR, d.timing)
    pairs = continuation_pairs(active, train, offsets, vb.lag, d.timing.step)
    u = _unit(embeddings[train].astype(np.float64))
    if len(u) < 6 or not pairs:
        return None
    y = u - u.mean(axis=0)
    _, _, vt = np.linalg.svd(y, full_matrices=False)
    y = y @ vt[: max(2, min(vb.dims, len(u) // 3))].T
    where = -np.ones(train.shape, dtype=np.int64)
    where[train] = np.arange(len(u))
    idx = np.array([(where[a, i], where[b, j]) for a, i, b, j in pairs])
    diff = y[idx[:, 0]] - y[idx[:, 1]]
    w_pairs = np.sum(diff * diff) / (2 * len(diff))
    lab = who[train]
    w_ref = np.mean(
        [
            np.sum((y[lab == k] - y[lab == k].mean(axis=0)) ** 2, axis=1).mean()
            for k in set(lab)
            if k >= 0 and np.sum(lab == k) >= 2
        ]
    )
    labelled = [(who[a, i], who[b, j]) for a, i, b, j in pairs if who[a, i] >= 0 <= who[b, j]]
    same = sum(p == q for p, q in labelled)
    return w_pairs / w_ref, len(pairs), same, len(labelled)


def evaluate(d, x, num, vb):
    starts = d._chunk_starts(len(x))
    active, embeddings, trainable, seconds = d._segment_and_embed(x, starts, None)
    if vb is not None:
        vb.trainable = trainable
        vb.offsets = reconstruct.chunk_frame_offsets(starts / SR, d.timing)
        vb.frame_step = d.timing.step
    t0 = time.perf_counter()
    r = cluster_chunks(d, x, starts, (active, embeddings, trainable, seconds), num)
    return r, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--setting", action="append", default=[], help="name=value ... (repeatable)")
    ap.add_argument(
        "--only", help="recordings whose label holds one of these texts (comma-separated)"
    )
    ap.add_argument(
        "--within",
        action="store_true",
        help="only compare the label-free within-speaker scatter with the reference's",
    )
    ap.add_argument("--given", action="store_true", help="also run with the count given")
    ap.add_argument("--cached", action="store_true", help="only recordings whose chunks are cached")
    args = ap.parse_args()
    print(f"{describe()}; 2 threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, 2)
    d = SavingDiarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    settings = ["default"] + args.setting
    if args.within:
        print("| recording | pairs' scatter / reference's | pairs | one reference voice |")
        print("|---|---|---|---|")
    else:
        print(
            "| recording | setting | count given | found / expected | DER 0 | DER 0.5 s | notes |"
        )
        print("|---|---|---|---|---|---|---|")
    pooled = {}
    for label, x, ref in dev_set():
        if args.only and not any(o in label for o in args.only.split(",")):
            continue
        key = hashlib.sha256(x.tobytes()).hexdigest()[:16]
        if args.cached and not (CHUNKS / f"{key}-{d.step:g}.npz").exists():
            continue
        if args.within:
            vb = SelfPLDAVBx(
                **{k: parse(v) for k, v in (p.split("=") for p in settings[-1].split())}
            )
            r = within_check(d, x, ref, vb)
            if r:
                print(f"| {label} | {r[0]:.2f} | {r[1]} | {r[2]} of {r[3]} |")
            continue
        lo, hi = counts(ref)
        expected = str(lo) if lo == hi else f"{lo}-{hi}"
        for setting in settings:
            vb = None
            if setting != "default":
                vb = SelfPLDAVBx(
                    **{k: parse(v) for k, v in (p.split("=") for p in setting.split())}
                )
            if vb is not None:
                vb.threshold, vb.min_cluster_size = d.threshold, d.min_cluster_size
            d.clustering = vb
            for num in (None, len({t.speaker for t in ref})) if args.given else (None,):
                r, spent = evaluate(d, x, num, vb)
                e0 = diarization_error_rate(ref, r.turns)
                e5 = diarization_error_rate(ref, r.turns, collar=0.5)
                right = lo <= len(r.speakers) <= hi
                p = pooled.setdefault((setting, num is not None), [0.0, 0.0, 0, 0, 0.0])
                p[0] += e0.der * e0.total
                p[1] += e0.total
                p[2] += right
                p[3] += 1
                p[4] += spent
                notes = vb.stats if vb is not None and num is None else ""
                print(
                    f"| {label} | {setting} | {num or 'no'} | {len(r.speakers)}/{expected}"
                    f"{'' if right else ' **wrong**'} | {100 * e0.der:.1f} | {100 * e5.der:.1f} "
                    f"| {notes} |",
                    flush=True,
                )
    for (name, given), (err, total, right, n, spent) in pooled.items():
        print(
            f"# {name}, count {'given' if given else 'not given'}: pooled DER 0 "
            f"{100 * err / total:.1f}%, counts right {right}/{n}, clustering and "
            f"reconstruction {spent:.2f} s in all"
        )


if __name__ == "__main__":
    main()
