"""What a run returns: the speaker-attributed transcript and how it was made.

A :class:`Result` holds the aligned segments (each with its speaker and
words), the speaker turns, and the facts a reader needs later: the source,
its duration and language, the models, the options, the versions, when it
ran and how fast. :meth:`Result.write` puts it on disk in every format of
:mod:`saywho.formats.writers`; :meth:`Result.from_json` reads transcript.json back.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .._internal.native import _core
from ..formats import writers
from ..formats.output_names import output_dir
from ..formats.plot import plot_result
from ..formats.rttm import Turn
from ..formats.tables import result_html, to_pandas
from .speaker_words import SpeakerSegment, SpeakerWord


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _versions() -> dict[str, str]:
    return {
        "saywho": _core.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }


@dataclass
class Result:
    """A transcript with speakers, and the record of the run that made it.

    ``turns`` is None when diarization did not run (then there is no RTTM);
    an empty list when it ran and found nobody speaking.
    """

    source: str | None = None
    duration: float = 0.0
    language: str | None = None
    segments: list[SpeakerSegment] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    turns: list[Turn] | None = None
    models: dict[str, str] = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    performance: dict = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=_versions)
    processed_at: str = field(default_factory=_now)

    def __repr__(self) -> str:
        # what, how long, how many speakers and segments: a line, not the
        # whole transcript (print(result.text) or result.segments show that)
        what = os.path.basename(self.source) if self.source else "samples"
        speakers = "no diarization" if self.turns is None else f"{len(self.speakers)} speakers"
        return (
            f"<saywho.Result {what!r}: {self.duration:.1f} s, {self.language or 'no speech'}, "
            f"{speakers}, {len(self.segments)} segments>"
        )

    @property
    def text(self) -> str:
        """The transcript as plain text, one line per speaker turn."""
        return writers.txt(self.segments)

    @property
    def metadata(self) -> dict:
        return {
            "source": self.source,
            "duration": self.duration,
            "language": self.language,
            "speakers": list(self.speakers),
            "models": dict(self.models),
            "saywho_version": self.versions.get("saywho", _core.__version__),
            "versions": dict(self.versions),
            "options": dict(self.options),
            "processed_at": self.processed_at,
        }

    def write(
        self,
        directory: str | os.PathLike,
        formats: str | Iterable[str] | None = None,
        *,
        per_input: bool = False,
        max_line_width: int | None = None,
        max_line_count: int | None = None,
        highlight_words: bool = False,
    ) -> list[Path]:
        """Writes transcript.json, .txt, .srt, .vtt, .tsv and .rttm into ``directory``.

        ``formats`` picks some of :data:`saywho.formats.writers.FORMATS`; by default
        every one the result allows (RTTM needs turns, so a transcription-only
        result has none). ``max_line_width``, ``max_line_count`` and
        ``highlight_words`` shape the SRT and WebVTT subtitles (Whisper's
        options; saywho.formats.subtitles). Each file goes to a temporary name and is
        renamed into place, so a failure leaves no half-written transcript.
        Returns the paths written.

        ``per_input=True`` writes into this recording's own folder inside
        ``directory`` (saywho.formats.output_names: its safe stem and a hash of its
        path), so many results can share one output folder without any
        writing over another's or outside it.
        """
        if per_input:
            source = self.source
            if not source:
                raise _core.OptionError(
                    "per_input=True needs the result of a file (this one came from samples)"
                )
            directory = output_dir(directory, source)
        subtitles = {
            "max_line_width": max_line_width,
            "max_line_count": max_line_count,
            "highlight_words": highlight_words,
        }
        return writers.write_all(
            directory,
            self.segments,
            self.metadata,
            turns=self.turns,
            performance=self.performance,
            formats=formats,
            subtitles=subtitles,
        )

    def to_pandas(self, table: str = "segments"):
        """A pandas DataFrame of the ``table``: "segments" (start, end,
        speaker, text), "words" (start, end, speaker, word, probability,
        segment: its row in segments) or "turns" (start, end, speaker,
        duration). pandas is optional: without it, an ImportError says so."""
        return to_pandas(self, table)

    def _repr_html_(self) -> str:
        """What a notebook shows: the run in a line, the timeline picture
        when matplotlib is installed, and a table of speaker turns with
        their text."""
        return result_html(self)

    def plot(
        self, path: str | os.PathLike, start: float = 0.0, end: float | None = None, **options
    ) -> Path:
        """Speakers on a timeline with their words, as PNG, SVG or PDF (needs
        matplotlib: ``pip install saywho[plot]``). See saywho.formats.plot."""
        return plot_result(self, path, start, end, **options)

    def to_dict(self) -> dict:
        """The record that transcript.json holds."""
        return json.loads(
            writers.transcript_json(self.metadata, self.segments, self.performance, self.turns)
        )

    @classmethod
    def from_dict(cls, record: dict) -> Result:
        meta = record.get("metadata", {})
        segments = [
            SpeakerSegment(
                s["start"],
                s["end"],
                s["text"],
                s.get("speaker"),
                [SpeakerWord(**w) for w in s.get("words") or ()],
                s.get("language"),
            )
            for s in record.get("segments", ())
        ]
        turns = record.get("turns")
        return cls(
            source=meta.get("source"),
            duration=meta.get("duration", 0.0),
            language=meta.get("language"),
            segments=segments,
            speakers=list(meta.get("speakers", ())),
            turns=None if turns is None else [Turn(**t) for t in turns],
            models=dict(meta.get("models", {})),
            options=dict(meta.get("options", {})),
            performance=dict(record.get("performance", {})),
            versions=dict(meta.get("versions", {})),
            processed_at=meta.get("processed_at", ""),
        )

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> Result:
        """Reads a transcript.json that :meth:`write` made."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))
