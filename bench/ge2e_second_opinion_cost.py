"""What a capped GE2E second opinion (bench/ge2e_resplit_study.py, cap 12)
costs next to the default's networks, on three recordings of the
development set: the default's segmentation and CAM++ over the whole
recording, then GE2E over as many chunks as the capped rule embedded there
(docs/diarization_quality.md gives those counts), evenly over the chunks
that hold speech. One run each, same process, same load: a ratio, not a
speed.

    python3 bench/ge2e_second_opinion_cost.py [--ge2e PATH/pretrained.pt]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from diarization_dev_set import describe, dev_set  # noqa: E402

import saywho  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

# recording -> local speakers the capped rule had GE2E embed there
EMBEDDED = {"AMI trn00": 21, "spokenwoz_SNG1640": 24, "aws_lca_autorepairs40": 24}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ge2e", help="GE2E's pretrained.pt (default: the installed resemblyzer's)")
    args = ap.parse_args()
    print(f"{describe()}; 2 threads; load {os.getloadavg()[0]:.1f}")
    runtime = saywho._core.Runtime("cpu", None, 2)
    campp = Diarizer(resolve_segmentation(None), resolve_embedding(None), runtime)
    ge2e = Diarizer(resolve_segmentation(None), args.ge2e or resolve_embedding("ge2e"), runtime)
    print(
        "| recording | default's networks s | GE2E over n chunks s | (networks + GE2E) / networks |"
    )
    print("|---|---|---|---|")
    for label, x, _ in dev_set():
        key = next((k for k in EMBEDDED if k in label), None)
        if key is None:
            continue
        starts = campp._chunk_starts(len(x))
        t0 = time.perf_counter()
        active, _, _, _ = campp._segment_and_embed(x, starts, None)
        networks = time.perf_counter() - t0
        speech = np.flatnonzero(active.any(axis=(1, 2)))
        pick = speech[np.linspace(0, len(speech) - 1, EMBEDDED[key]).round().astype(int)]
        t0 = time.perf_counter()
        emb = np.full((len(pick), 3, ge2e.embedding.dimension), np.nan, np.float32)
        trainable = np.zeros((len(pick), 3), bool)
        for i, s, span, _ in ge2e._batches(x, starts[pick]):
            ge2e._embed_ge2e(span, s, active[pick][i : i + len(s)], i, emb, trainable)
        second = time.perf_counter() - t0
        print(
            f"| {label} | {networks:.1f} | {second:.1f} (n = {len(pick)}) "
            f"| {(networks + second) / networks:.2f}x (load {os.getloadavg()[0]:.1f}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
