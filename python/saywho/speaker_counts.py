"""The speaker-count rules, in one place: ``num_speakers``, ``min_speakers``,
``max_speakers``.

Each is None or a whole number of at least 1; ``min_speakers`` may not be
more than ``max_speakers``; a known ``num_speakers`` fixes both bounds. The
diarizer (saywho.diarization.diarize), the command line (saywho.cli_options)
and the batch manifests (saywho.batch.inputs) all check through here.
"""

from __future__ import annotations

import math
import numbers

from .native import _core

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


def speaker_bounds(
    num_speakers=None, min_speakers=None, max_speakers=None
) -> tuple[int | None, int, float]:
    """(num, lowest, highest) the clustering may choose from: ``num`` when
    known (it fixes both bounds), else 1 and infinity unless given."""
    for name, value in zip(NAMES, (num_speakers, min_speakers, max_speakers)):
        problem = count_problem(value)
        if problem:
            raise _core.OptionError(f"{name} must be a positive int: {value!r} {problem}")
    if num_speakers is not None:
        return num_speakers, num_speakers, num_speakers
    lo = min_speakers or 1
    hi = math.inf if max_speakers is None else max_speakers
    if lo > hi:
        raise _core.OptionError(f"min_speakers {lo} is more than max_speakers {hi}")
    return None, lo, hi
