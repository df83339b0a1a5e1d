"""The speaker-count rules, in one place: ``num_speakers``, ``min_speakers``,
``max_speakers``.

Each is None or a whole number of at least 1; ``min_speakers`` may not be
more than ``max_speakers``; a known ``num_speakers`` fixes both bounds, so it
is given alone: ``num_speakers`` with ``min_speakers`` or ``max_speakers`` is
an OptionError everywhere (a count and bounds that disagree would leave one
of them silently unused). Text (a manifest's cell, a form field, a Ray
column, a flag) is read by :func:`parse_count`, where blank is "not given"
and 0 is an error, as it is for a number.

The five ways in all check through here: the library (``Pipeline.process``
and ``diarize`` build a :class:`SpeakerCounts`, before any audio is read),
the command line (saywho.cli.options), the batch manifests
(saywho.service.batch.inputs), Ray's columns (saywho.ray) and the server's form
fields (saywho.service.server.fields).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from .._internal.native import _core

NAMES = ("num_speakers", "min_speakers", "max_speakers")


def count_problem(value) -> str | None:
    """What is wrong with one count, or None (None itself is fine: unknown)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return "is not a whole number"
    if value < 1:
        return "is not at least 1"
    return None


def parse_count(text, name: str = "num_speakers") -> int | None:
    """A count written as text (a manifest's cell, a form field): blank is
    None, anything but a whole number >= 1 an OptionError naming ``name``."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _core.OptionError(f"{name} {text!r} is not a whole number") from None
    if not value.is_integer():
        raise _core.OptionError(f"{name} {text!r} is not a whole number")
    count = int(value)
    if count_problem(count):
        raise _core.OptionError(f"{name} {text!r} {count_problem(count)}")
    return count


@dataclass(frozen=True)
class SpeakerCounts:
    """The speaker counts of one recording, checked when made: the small
    value the stages carry instead of three loose keywords."""

    num_speakers: int | None = None
    min_speakers: int | None = None
    max_speakers: int | None = None

    def __post_init__(self) -> None:
        for name in NAMES:
            value = getattr(self, name)
            problem = count_problem(value)
            if problem:
                raise _core.OptionError(f"{name} must be a positive int: {value!r} {problem}")
        if self.num_speakers is not None and (
            self.min_speakers is not None or self.max_speakers is not None
        ):
            raise _core.OptionError(
                "give num_speakers or min_speakers/max_speakers, not both "
                f"(num_speakers {self.num_speakers} fixes the count)"
            )
        lo, hi = self.min_speakers, self.max_speakers
        if lo is not None and hi is not None and lo > hi:
            raise _core.OptionError(f"min_speakers {lo} is more than max_speakers {hi}")

    @classmethod
    def from_text(cls, texts: Mapping[str, object]) -> SpeakerCounts:
        """The counts among ``texts`` (name -> text, as a form or a manifest
        row holds them; other names are ignored), each read by parse_count."""
        return cls(**{n: parse_count(texts.get(n), n) for n in NAMES})

    def keywords(self) -> dict[str, int]:
        """The counts given, as keywords of Pipeline.process / diarize."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    def bounds(self) -> tuple[int | None, int, float]:
        """(num, lowest, highest) the clustering may choose from: ``num`` when
        known (it fixes both bounds), else 1 and infinity unless given."""
        if self.num_speakers is not None:
            return self.num_speakers, self.num_speakers, self.num_speakers
        lo = self.min_speakers or 1
        hi = math.inf if self.max_speakers is None else self.max_speakers
        return None, lo, hi


def speaker_bounds(
    num_speakers=None, min_speakers=None, max_speakers=None
) -> tuple[int | None, int, float]:
    """SpeakerCounts(...).bounds(): the keywords checked, then the bounds."""
    return SpeakerCounts(num_speakers, min_speakers, max_speakers).bounds()
