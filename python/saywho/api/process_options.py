"""Pipeline.process's own options, declared once (as whisper/options.py
declares transcription's).

``ProcessOptions`` holds what ``process`` adds to transcription: which
stages run, the speaker counts, the alignment's threshold, VAD, silence,
known speakers. ``Pipeline.process``'s keywords are its fields followed by
TranscribeOptions' (``process_keywords`` writes that signature, so
``help()`` and the server see every one); :meth:`ProcessOptions.split`
sorts a call's keywords into the two objects, and ``saywho.api.process`` reads
only those objects. Values are checked when the object is made, so a bad
option, the speaker counts included, fails before any audio is read.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._internal.native import _core
from ..audio.vad import VadOptions
from ..diarization.speaker_counts import SpeakerCounts
from ..whisper.options import FIELDS as TRANSCRIBE_FIELDS
from ..whisper.options import TranscribeOptions
from .speaker_words import WORD_COVERAGE_THRESHOLD


@dataclass(frozen=True)
class ProcessOptions:
    """``transcribe=False`` or ``diarize=False`` skips a stage (``diarize``
    None: the Pipeline's own default); ``num_speakers`` / ``min_speakers`` /
    ``max_speakers`` (saywho.diarization.speaker_counts); ``threshold``: the share of a
    word a speaker's turns must cover to get it; ``vad`` / ``vad_options``:
    faster-whisper's ``vad_filter`` / ``vad_parameters``; ``skip_silence``,
    ``known_speakers`` and ``fill_nearest`` as Pipeline.process says."""

    transcribe: bool = True
    diarize: bool | None = None
    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None
    threshold: float = WORD_COVERAGE_THRESHOLD
    vad: bool = False
    vad_options: VadOptions | dict | None = None
    skip_silence: bool = True
    known_speakers: dict | None = None
    fill_nearest: bool = True

    def __post_init__(self) -> None:
        if not (self.transcribe or self.diarize is not False):
            raise _core.OptionError("process needs transcribe=True, diarize=True or both")
        if (
            isinstance(self.threshold, bool)
            or not isinstance(self.threshold, numbers.Real)
            or not 0.0 <= self.threshold <= 1.0
        ):
            raise _core.OptionError(f"threshold must be in [0, 1], not {self.threshold}")
        self.speakers  # noqa: B018 (checks the counts now, before any audio is read)

    @property
    def speakers(self) -> SpeakerCounts:
        return SpeakerCounts(self.num_speakers, self.min_speakers, self.max_speakers)

    @classmethod
    def split(
        cls,
        keywords: Mapping[str, Any],
        whole: TranscribeOptions | None = None,
        diarize_by_default: bool = True,
    ) -> tuple[ProcessOptions, TranscribeOptions]:
        """A call's keywords as (these options, the transcription's): the
        names declared here build one, the rest (with ``whole``, a
        TranscribeOptions given as ``options=``) the other; ``vad`` and
        ``vad_options`` are transcription's ``vad_filter`` and
        ``vad_parameters`` too. ``diarize`` None becomes ``diarize_by_default``;
        both stages time every word unless ``word_timestamps`` is given."""
        own = {k: v for k, v in keywords.items() if k in NAMES}
        settings = cls(**own)
        if settings.diarize is None:
            settings = dataclasses.replace(settings, diarize=diarize_by_default)
        if not (settings.transcribe or settings.diarize):
            raise _core.OptionError("process needs transcribe=True, diarize=True or both")
        rest = {k: v for k, v in keywords.items() if k not in NAMES}
        if settings.vad:
            rest["vad_filter"] = True
            if settings.vad_options is not None:
                rest["vad_parameters"] = settings.vad_options
        if settings.transcribe and settings.diarize and "word_timestamps" not in rest:
            rest["word_timestamps"] = True  # the alignment needs every word's time
        whisper = TranscribeOptions.build(whole, rest)
        if whisper.vad_filter and not settings.vad:
            settings = dataclasses.replace(settings, vad=True)
        return settings, whisper


FIELDS = dataclasses.fields(ProcessOptions)
NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)


def process_keywords(func):
    """Decorator for ``Pipeline.process(self, audio, *, <callbacks>,
    **keywords)``: ``inspect.signature`` and ``help()`` show these options,
    then transcription's, as keywords with their defaults and types, then
    the function's own keyword-only parameters."""
    kinds = inspect.Parameter
    own = list(inspect.signature(func).parameters.values())
    lead = [p for p in own if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    trail = [p for p in own if p.kind == kinds.KEYWORD_ONLY]
    declared = [
        kinds(f.name, kinds.KEYWORD_ONLY, default=f.default, annotation=f.type)
        for f in (*FIELDS, *TRANSCRIBE_FIELDS)
    ]
    func.__signature__ = inspect.Signature(lead + declared + trail)
    return func
