"""RTTM, the NIST speaker-turn format that diarization tools exchange.

One ``SPEAKER`` line per turn, ten space-separated fields::

    SPEAKER <uri> <channel> <onset> <duration> <NA> <NA> <speaker> <NA> <NA>

Only ``SPEAKER`` lines carry turns; other types (``SPKR-INFO``, ``LEXEME``...)
are skipped so that full NIST files read too.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Union

from .._internal.native import _core

PathOrFile = Union[str, "os.PathLike[str]", IO[str]]


@dataclass(frozen=True)
class Turn:
    """One speaker talking from ``start`` to ``end`` seconds."""

    start: float
    end: float
    speaker: str

    @property
    def duration(self) -> float:
        return self.end - self.start


def read_rttm(source: PathOrFile) -> dict[str, list[Turn]]:
    """Turns of every file id (uri) in an RTTM file, in file order.

    ``source`` is a path or an open text file. A line that is not blank, not a
    comment (``#`` or NIST's ``;;``) and not a well-formed ``SPEAKER`` line
    raises ``OptionError`` naming the file and the line number, because a
    silently dropped turn would skew every metric computed from it.
    """
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        try:
            with open(name, encoding="utf-8") as f:
                return _parse(f, name)
        except OSError as e:
            raise _core.OptionError(f"{name}: cannot read RTTM: {e.strerror or e}") from None
    return _parse(source, str(getattr(source, "name", "<stream>")))


def _parse(lines: Iterable[str], name: str) -> dict[str, list[Turn]]:
    turns: dict[str, list[Turn]] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or fields[0].startswith(("#", ";;")):
            continue
        if fields[0] != "SPEAKER":
            continue
        # The last two <NA> fields are often dropped by hand-written files;
        # the speaker (field 8) is the last one a turn needs.
        if len(fields) < 8:
            raise _core.OptionError(
                f"{name}:{number}: SPEAKER line has {len(fields)} fields, needs at least 8"
            )
        uri, onset, duration, speaker = fields[1], fields[3], fields[4], fields[7]
        try:
            start, length = float(onset), float(duration)
        except ValueError:
            raise _core.OptionError(
                f"{name}:{number}: onset {onset!r} and duration {duration!r} must be numbers"
            ) from None
        if not (math.isfinite(start) and math.isfinite(length)) or length < 0:
            raise _core.OptionError(
                f"{name}:{number}: onset {onset} and duration {duration} must be finite, "
                "duration not negative"
            )
        turns.setdefault(uri, []).append(Turn(start, start + length, speaker))
    return turns


def write_rttm(turns: Iterable[Turn], path: str | os.PathLike[str], uri: str) -> None:
    """Writes ``turns`` of file id ``uri`` to ``path``, times to the millisecond.

    The file is written under a temporary name in the same directory and then
    renamed over ``path``, so a reader never sees half a file and a failure
    leaves any earlier file untouched.
    """
    _check_token(uri, "uri")
    text = io.StringIO()
    for turn in turns:
        _check_token(turn.speaker, "speaker")
        if not (math.isfinite(turn.start) and math.isfinite(turn.end)) or turn.end < turn.start:
            raise _core.OptionError(
                f"turn {turn}: start and end must be finite and end not before start"
            )
        if round(turn.end - turn.start, 3) <= 0:
            continue  # a line of duration 0.000 says nothing a reader can use
        text.write(
            f"SPEAKER {uri} 1 {turn.start:.3f} {turn.end - turn.start:.3f} "
            f"<NA> <NA> {turn.speaker} <NA> <NA>\n"
        )
    _write_atomic(os.fspath(path), text.getvalue())


def _check_token(value: str, what: str) -> None:
    # A space inside a field would shift every later field of the line.
    if not value or any(c.isspace() for c in value):
        raise _core.OptionError(f"RTTM {what} {value!r} must be non-empty without whitespace")


def _write_atomic(path: str, text: str) -> None:
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp makes the file 0600; give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
