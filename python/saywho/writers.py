"""Transcript files: JSON, plain text, SRT, WebVTT and RTTM.

Every file is written under a temporary name in its directory and renamed
into place, so a run that fails half-way leaves no half-written transcript
that looks complete. A segment is anything with ``start``, ``end`` and
``text`` (and optionally ``speaker`` and ``words``); speakerless segments are
written without labels.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from . import _core

FORMATS = ("json", "txt", "srt", "vtt", "rttm")


def _clock(seconds: float, decimal: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _speaker(segment) -> str | None:
    return getattr(segment, "speaker", None)


def _labelled(segment) -> str:
    text = segment.text.strip()
    speaker = _speaker(segment)
    return f"{speaker}: {text}" if speaker else text


def srt(segments: Iterable) -> str:
    """SubRip: numbered cues, ``00:00:01,200 --> 00:00:03,400``, speaker prefixed."""
    cues = [
        f"{i}\n{_clock(s.start, ',')} --> {_clock(s.end, ',')}\n{_labelled(s)}\n"
        for i, s in enumerate(segments, start=1)
    ]
    return "\n".join(cues)


def vtt(segments: Iterable) -> str:
    """WebVTT: a header, then cues with ``00:00:01.200 --> 00:00:03.400``."""
    cues = [f"{_clock(s.start, '.')} --> {_clock(s.end, '.')}\n{_labelled(s)}\n" for s in segments]
    return "WEBVTT\n\n" + "\n".join(cues)


def txt(segments: Sequence) -> str:
    """One line per speaker turn: consecutive segments of a speaker are joined.

    Segments without a speaker (a transcription-only run) keep a line each.
    """
    lines: list[str] = []
    turn: list = []

    def flush() -> None:
        if not turn:
            return
        text = " ".join(s.text.strip() for s in turn if s.text.strip())
        speaker = _speaker(turn[0])
        label = f" {speaker}:" if speaker else ""
        lines.append(f"[{_clock(turn[0].start, '.')} - {_clock(turn[-1].end, '.')}]{label} {text}")
        turn.clear()

    for s in segments:
        if turn and (_speaker(s) is None or _speaker(s) != _speaker(turn[0])):
            flush()
        turn.append(s)
    flush()
    return "\n".join(lines) + ("\n" if lines else "")


def _token(value: str) -> str:
    # A space inside an RTTM field would shift every later field of the line.
    return "_".join(str(value).split()) or "<NA>"


def rttm(turns: Iterable, uri: str) -> str:
    """NIST RTTM speaker lines (start and duration in seconds, 3 decimals).

    Whitespace inside the uri or a speaker label becomes ``_``, as the format
    splits fields on whitespace.
    """
    uri = _token(uri)
    return "".join(
        f"SPEAKER {uri} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {_token(t.speaker)} "
        "<NA> <NA>\n"
        for t in turns
    )


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if hasattr(value, "item") and callable(value.item):  # NumPy scalars
        return _plain(value.item())
    return value


def transcript_json(
    metadata: dict,
    segments: Sequence,
    performance: dict | None = None,
    turns: Sequence | None = None,
) -> str:
    """``{"metadata", "performance", "segments"[, "turns"]}`` as UTF-8 JSON.

    Non-finite numbers are written as null, which JSON can carry.
    """
    record = {
        "metadata": _plain(metadata),
        "performance": _plain(performance or {}),
        "segments": [_plain(s) for s in segments],
    }
    if turns is not None:
        record["turns"] = [
            {"start": float(t.start), "end": float(t.end), "speaker": str(t.speaker)} for t in turns
        ]
    return json.dumps(record, ensure_ascii=False, indent=1, allow_nan=False) + "\n"


def write_atomic(path: str | os.PathLike, produce: Callable[[], str | bytes]) -> Path:
    """Writes ``produce()`` (text, or bytes such as a PNG) to ``path`` through
    a temporary file and a rename.

    ``produce`` runs before anything is opened, and the temporary file is
    removed if writing fails, so ``path`` is either the old file or the new.
    """
    path = Path(path)
    text = produce()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        binary = isinstance(text, bytes)
        with (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        ) as f:
            f.write(text)
            f.flush()
            # on disk before the rename, so a crash cannot leave an empty file
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give open()'s mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """The formats asked for, each once, in order; OptionError for unknown ones."""
    if isinstance(formats, str):
        formats = (formats,)
    formats = tuple(dict.fromkeys(formats))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise _core.OptionError(
            f"unknown transcript format(s) {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(FORMATS)}"
        )
    return formats


def write_all(
    directory: str | os.PathLike,
    segments: Sequence,
    metadata: dict,
    *,
    turns: Sequence | None = None,
    performance: dict | None = None,
    formats: str | Iterable[str] | None = None,
    stem: str = "transcript",
) -> list[Path]:
    """Writes transcript.<format> files into ``directory`` (created if needed).

    By default every format that the inputs allow: RTTM needs speaker
    ``turns``; asking for it without them is an OptionError. Returns the paths
    written, in order.
    """
    if formats is None:
        formats = [f for f in FORMATS if f != "rttm" or turns is not None]
    formats = check_formats(formats)
    if "rttm" in formats and turns is None:
        raise _core.OptionError("the rttm format needs speaker turns (run with diarization)")
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    uri = Path(str(metadata.get("source") or stem)).stem or stem
    producers = {
        "json": lambda: transcript_json(metadata, segments, performance, turns),
        "txt": lambda: txt(segments),
        "srt": lambda: srt(segments),
        "vtt": lambda: vtt(segments),
        "rttm": lambda: rttm(turns or (), uri),
    }
    return [write_atomic(out / f"{stem}.{fmt}", producers[fmt]) for fmt in formats]
