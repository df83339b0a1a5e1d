"""DER of the diarization, GE2E against CAM++, with and without the speaker count.

Recordings: ../shared/data/two_speakers.wav (two_speakers.rttm), and two
assemblies with overlaps (bench/diarization_assembly.py): five synthetic
espeak-ng voices and Kennedy, and five real voices from ../shared/data.
``--sweep`` instead prints DER and speakers found for a range of clustering
thresholds (the embeddings computed once per encoder), the way CAM++'s
default threshold was chosen on the espeak-ng assembly.

    python3 bench/diarization_quality.py [--sweep campp] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from diarization_assembly import DATA, espeak_meeting, real_meeting  # noqa: E402

import saywho  # noqa: E402
from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.metrics import diarization_error_rate  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402
from saywho.rttm import read_rttm  # noqa: E402


class CachedDiarizer(Diarizer):
    """Segments and embeds each recording once; re-clusters at will."""

    _cache: dict = {}

    def _segment_and_embed(self, audio, starts, progress):
        key = (id(self), len(audio), float(audio[: 10 * 16000].sum()))
        if key not in self._cache:
            self._cache[key] = super()._segment_and_embed(audio, starts, progress)
        return self._cache[key]


def recordings():
    two = saywho.load_audio(DATA / "two_speakers.wav")
    (ref,) = read_rttm(DATA / "two_speakers.rttm").values()
    yield "two_speakers.wav (2 voices)", two, ref
    x, turns = espeak_meeting()
    yield f"espeak-ng assembly (6 voices, {len(x) / 16000:.0f} s)", x, turns
    x, turns = real_meeting()
    yield f"real assembly (5 voices, {len(x) / 16000:.0f} s)", x, turns


def speakers_in(turns) -> int:
    return len({t.speaker for t in turns})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", choices=("campp", "ge2e"))
    ap.add_argument("--thresholds", default="0.5,0.6,0.7,0.8,0.9,1.0,1.1")
    ap.add_argument("--encoders", default="ge2e,campp")
    ap.add_argument("--threshold", type=float, help="instead of each encoder's default")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    seg = resolve_segmentation(None)
    recs = list(recordings())
    with _core.Runtime(device="cpu", threads=args.threads) as rt:
        encoders = [args.sweep] if args.sweep else args.encoders.split(",")
        for name in encoders:
            with CachedDiarizer(seg, resolve_embedding(name), rt, threshold=args.threshold) as d:
                default = d.threshold
                if args.sweep:
                    print(f"{name}: threshold sweep (default {default})")
                    for label, audio, ref in recs:
                        for th in [float(t) for t in args.thresholds.split(",")]:
                            d.threshold = th
                            out = d(audio)
                            der = diarization_error_rate(ref, out.turns, collar=0.0)
                            print(
                                f"  {label:38} th {th:4.2f}: DER {100 * der.der:5.1f}% "
                                f"speakers {len(out.speakers)}/{speakers_in(ref)}"
                            )
                    continue
                print(f"\n{name} (threshold {default}); DER % at collar 0 / 0.25 s")
                print(f"  {'recording':38} {'count given':>11} {'DER 0':>6} {'DER .25':>7} "
                      f"{'miss':>5} {'FA':>5} {'conf':>5} {'found':>5} {'xRT':>5}")  # fmt: skip
                for label, audio, ref in recs:
                    for given in (None, speakers_in(ref)):
                        t0 = time.perf_counter()
                        out = d(audio, num_speakers=given)
                        # the second run reuses the cached embeddings: no speed to report
                        xrt = (
                            len(audio) / 16000 / (time.perf_counter() - t0) if given is None else 0
                        )
                        strict = diarization_error_rate(ref, out.turns, collar=0.0)
                        loose = diarization_error_rate(ref, out.turns, collar=0.25)
                        total = strict.total
                        print(
                            f"  {label:38} {str(given or 'no'):>11} {100 * strict.der:6.1f} "
                            f"{100 * loose.der:7.1f} {100 * strict.missed / total:5.1f} "
                            f"{100 * strict.false_alarm / total:5.1f} "
                            f"{100 * strict.confusion / total:5.1f} "
                            f"{len(out.speakers):>2}/{speakers_in(ref)} {f'{xrt:.1f}' if xrt else '':>5}"
                        )
    np.seterr(all="ignore")


if __name__ == "__main__":
    main()
