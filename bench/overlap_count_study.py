"""Missed overlapped speech (issue 39, deliverable 5): does a higher speaker
count per frame recover any of it, at no cost elsewhere?

segmentation-3.0's powerset gives at most 2 local speakers per frame of a
chunk, and the pipeline's instantaneous count is the mean over the chunks
covering a frame, rounded (pyannote 3.1's). Overlap that the chunks agree on
only in part is rounded away. Candidates, each replacing that count in
the otherwise unchanged pipeline (Diarizer.from_chunks over the cached
chunks of bench/diarization_dev_set.py, run that first):

- ``round``: today's (half to even);
- ``up@0.3`` / ``up@0.4``: the mean rounded up from .3 / .4;
- ``max``: the most local speakers any covering chunk has there;

printing missed / false alarm / confusion pooled over the AMI excerpts (the
overlapping meetings) and over everything else of the set.

    python3 bench/overlap_count_study.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import diarization_dev_set as dev  # noqa: E402
from machine import describe  # noqa: E402

from saywho.diarization import reconstruct  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402

TODAY = reconstruct.speaker_count


def rounded_up_from(cut: float):
    def count(active, offsets, total):
        frames = active.shape[1]
        summed = np.zeros(total)
        covered = np.zeros(total)
        for c, off in enumerate(offsets):
            summed[off : off + frames] += active[c].sum(axis=1)
            covered[off : off + frames] += 1.0
        mean = summed / np.maximum(covered, 1.0)
        return np.floor(mean + (1.0 - cut)).astype(np.int8)

    return count


def most(active, offsets, total):
    frames = active.shape[1]
    out = np.zeros(total, np.int8)
    for c, off in enumerate(offsets):
        np.maximum(
            out[off : off + frames],
            active[c].sum(axis=1).astype(np.int8),
            out=out[off : off + frames],
        )
    return out


RULES = {
    "round": TODAY,
    "up@0.4": rounded_up_from(0.4),
    "up@0.3": rounded_up_from(0.3),
    "max": most,
}


def main() -> None:
    print(describe())
    d = dev.SavingDiarizer(resolve_segmentation(None), resolve_embedding(None))
    sets = [(label, x, ref) for label, x, ref in dev.dev_set()]
    print(
        "| count rule | recordings | speech s | missed % | false alarm % | confusion % | DER 0 % |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, rule in RULES.items():
        reconstruct.speaker_count = rule
        sums = {"AMI excerpts": np.zeros(5), "the rest": np.zeros(5)}
        for label, x, ref in sets:
            r = dev.evaluate(d, x)
            e = diarization_error_rate(ref, r.turns)
            key = "AMI excerpts" if label.startswith("AMI") else "the rest"
            sums[key] += [e.total, e.missed, e.false_alarm, e.confusion, 1]
        for key, (total, missed, fa, conf, n) in sums.items():
            print(
                f"| {name} | {key} ({int(n)}) | {total:.0f} | {100 * missed / total:.1f} | "
                f"{100 * fa / total:.1f} | {100 * conf / total:.1f} | "
                f"{100 * (missed + fa + conf) / total:.1f} |",
                flush=True,
            )
    reconstruct.speaker_count = TODAY


if __name__ == "__main__":
    main()
