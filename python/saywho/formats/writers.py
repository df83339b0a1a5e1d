"""Transcript files: JSON, plain text, SRT, WebVTT, TSV and RTTM.

Every file is written under a temporary name in its directory and renamed
into place, so a run that fails half-way leaves no half-written transcript
that looks complete. A segment is anything with ``start``, ``end`` and
``text`` (and optionally ``speaker`` and ``words``); speakerless segments are
written without labels. SRT and WebVTT take the subtitle options of
:mod:`saywho.formats.subtitles` (``max_line_width``, ``max_line_count``,
``highlight_words``).
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

from .._internal.native import _core
from .subtitles import build_cues, check_options, cue_texts

FORMATS = ("json", "txt", "srt", "vtt", "tsv", "rttm")
SUBTITLE_OPTIONS = ("max_line_width", "max_line_count", "highlight_words")


def _clock(seconds: float, decimal: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{decimal}{millis:03d}"


def _speaker(segment) -> str | None:
    return getattr(segment, "speaker", None)


def _srt_label(speaker: str) -> str:
    return f"{speaker}: "


def srt(
    segments: Iterable,
    max_line_width: int | None = None,
    max_line_count: int | None = None,
    highlight_words: bool = False,
) -> str:
    """SubRip: numbered cues, ``00:00:01,200 --> 00:00:03,400``, the speaker
    before the text (``SPEAKER_00: Hello``); subtitle options as saywho.formats.subtitles."""
    cues = []
    for cue in build_cues(segments, max_line_width, max_line_count, _srt_label):
        label = _srt_label(cue.speaker) if cue.speaker else ""
        for start, end, text in cue_texts(cue, highlight_words):
            number = len(cues) + 1
            cues.append(f"{number}\n{_clock(start, ',')} --> {_clock(end, ',')}\n{label}{text}\n")
    return "\n".join(cues)


def _vtt_escape(text: str) -> str:
    # cue text is markup: a literal <, > or & would open a tag or an entity
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _voice(speaker: str) -> str:
    # a voice annotation ends at the tag's ">" and may not hold a newline
    return " ".join(_vtt_escape(speaker).split())


def vtt(
    segments: Iterable,
    max_line_width: int | None = None,
    max_line_count: int | None = None,
    highlight_words: bool = False,
) -> str:
    """WebVTT: a header, then cues with ``00:00:01.200 --> 00:00:03.400``, the
    speaker as a voice tag (``<v SPEAKER_00>Hello``), the text escaped;
    subtitle options as saywho.formats.subtitles."""
    cues = []
    for cue in build_cues(segments, max_line_width, max_line_count):
        voice = f"<v {_voice(cue.speaker)}>" if cue.speaker else ""
        for start, end, text in cue_texts(cue, highlight_words, _vtt_escape):
            cues.append(f"{_clock(start, '.')} --> {_clock(end, '.')}\n{voice}{text}\n")
    return "WEBVTT\n\n" + "\n".join(cues)


def tsv(segments: Iterable) -> str:
    """Whisper's TSV (a header, then start and end in whole milliseconds and
    the text, tab-separated) with the speaker as a fourth column, so readers
    of Whisper's three columns still read it. Tabs and newlines inside the
    text or label become spaces."""

    def clean(value) -> str:
        return " ".join(str(value).split()) if value is not None else ""

    rows = ["start\tend\ttext\tspeaker"]
    for s in segments:
        start, end = round(1000 * s.start), round(1000 * s.end)
        rows.append(f"{start}\t{end}\t{clean(s.text)}\t{clean(_speaker(s))}")
    return "\n".join(rows) + "\n"


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
    splits fields on whitespace. A turn that would be written with a
    duration of 0.000 is left out: it says nothing a reader can use.
    """
    uri = _token(uri)
    return "".join(
        f"SPEAKER {uri} 1 {t.start:.3f} {t.end - t.start:.3f} <NA> <NA> {_token(t.speaker)} "
        "<NA> <NA>\n"
        for t in turns
        if round(t.end - t.start, 3) > 0
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


# JSON times are rounded to the millisecond (faster-whisper rounds its
# batched segments to 3 decimals and its words to 2; a plain sum such as
# 4.36 + 2.02 = 6.380000000000004 would otherwise show its float noise)
TIME_DECIMALS = 3
TIME_KEYS = ("start", "end")


def _rounded_times(record):
    """``record`` with every start and end (segments', words', turns') rounded
    to TIME_DECIMALS."""
    if isinstance(record, list):
        return [_rounded_times(r) for r in record]
    if not isinstance(record, dict):
        return record
    return {
        k: round(v, TIME_DECIMALS) if k in TIME_KEYS and isinstance(v, float) else _rounded_times(v)
        for k, v in record.items()
    }


def _segment_record(segment) -> dict:
    """A segment as JSON, times to the millisecond; its language only when it
    has one (multilingual runs), so one-language transcripts keep their shape."""
    record = _rounded_times(_plain(segment))
    if isinstance(record, dict) and record.get("language", "") is None:
        del record["language"]
    return record


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
        "segments": [_segment_record(s) for s in segments],
    }
    if turns is not None:
        record["turns"] = [
            {
                "start": round(float(t.start), TIME_DECIMALS),
                "end": round(float(t.end), TIME_DECIMALS),
                "speaker": str(t.speaker),
            }
            for t in turns
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
    subtitles: dict | None = None,
) -> list[Path]:
    """Writes transcript.<format> files into ``directory`` (created if needed).

    By default every format that the inputs allow: RTTM needs speaker
    ``turns``; asking for it without them is an OptionError. ``subtitles``:
    the SRT and WebVTT options (SUBTITLE_OPTIONS). Returns the paths
    written, in order.
    """
    subtitles = dict(subtitles or {})
    unknown = sorted(set(subtitles) - set(SUBTITLE_OPTIONS))
    if unknown:
        raise _core.OptionError(
            f"unknown subtitle option(s) {', '.join(unknown)}; "
            f"choose from {', '.join(SUBTITLE_OPTIONS)}"
        )
    check_options(subtitles.get("max_line_width"), subtitles.get("max_line_count"))
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
        "srt": lambda: srt(segments, **subtitles),
        "vtt": lambda: vtt(segments, **subtitles),
        "tsv": lambda: tsv(segments),
        "rttm": lambda: rttm(turns or (), uri),
    }
    return [write_atomic(out / f"{stem}.{fmt}", producers[fmt]) for fmt in formats]
