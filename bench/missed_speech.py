"""Where the missed speech of a diarization comes from: segmentation-3.0 or the rest.

For each recording of the development set (bench/conversations.py) the speech
that segmentation-3.0's own speaker count leaves out (frames where fewer
local speakers are active, aggregated over the overlapping chunks, than the
reference has) is set against the missed speech of the whole pipeline (DER's
"missed", collar 0). The pipeline cannot output more speakers in a frame than
that count, so the first bounds the second from below; what lies between is
lost by the clustering and reconstruction (two local speakers of one chunk
given one cluster, say).

    python3 bench/missed_speech.py [--encoder campp] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from conversations import recordings  # noqa: E402
from machine import describe  # noqa: E402

from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer, reconstruct  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402


class SegmentationKept(Diarizer):
    """Keeps the last recording's local speaker activity and chunk starts."""

    kept: tuple = ()

    def _segment_and_embed(self, audio, starts, progress):
        out = super()._segment_and_embed(audio, starts, progress)
        self.kept = (out[0], starts)
        return out


def segmentation_missed(d: SegmentationKept, ref, seconds: float) -> tuple[float, float, float]:
    """(reference speech, speech the count leaves out, of it where it finds no
    speech at all), in seconds, each overlapped speaker counted."""
    active, starts = d.kept
    offsets = reconstruct.chunk_frame_offsets(starts / 16000, d.timing)
    total = int(offsets[-1]) + active.shape[1]
    count = reconstruct.speaker_count(active, offsets, total)
    centre = d.timing.start(np.arange(total)) + d.timing.duration / 2
    truth = np.zeros(total)
    for t in ref:
        truth += (centre >= t.start) & (centre < t.end)
    truth[centre > seconds] = 0
    short = np.maximum(truth - count, 0)
    step = d.timing.step
    return truth.sum() * step, short.sum() * step, short[count == 0].sum() * step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="campp")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{describe()}; {args.threads} threads; load {load}")
    print("| recording | speech s | missed by segmentation's count % | of it, no speech found % "
          "| missed by the pipeline % |")  # fmt: skip
    print("|---|---|---|---|---|")
    sums = np.zeros(3)
    with (
        _core.Runtime(device="cpu", threads=args.threads) as rt,
        SegmentationKept(resolve_segmentation(None), resolve_embedding(args.encoder), rt) as d,
    ):
        for label, audio, ref in recordings():
            out = d(audio)
            speech, short, silent = segmentation_missed(d, ref, len(audio) / 16000)
            der = diarization_error_rate(ref, out.turns, collar=0.0)
            missed = der.missed / der.total
            sums += (speech, short, missed * der.total)
            print(f"| {label} | {speech:.1f} | {100 * short / speech:.1f} | "
                  f"{100 * silent / speech:.1f} | {100 * missed:.1f} |")  # fmt: skip
    print(f"| pooled | {sums[0]:.1f} | {100 * sums[1] / sums[0]:.1f} | | "
          f"{100 * sums[2] / sums[0]:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
