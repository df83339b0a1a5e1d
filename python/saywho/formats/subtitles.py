"""Subtitle cues for SRT and WebVTT: lines of a set width, cues of a set
number of lines, and karaoke-style highlighting of the word being spoken.

The options are Whisper's (``max_line_width``, ``max_line_count``,
``highlight_words``), with one rule of saywho's own: a cue never holds two
speakers, so a speaker change always starts a new cue.

- Neither width nor count: a cue per segment, its text on one line.
- ``max_line_width`` alone: a cue per segment, its words wrapped into lines
  of at most that many characters (a longer word gets a line of its own).
- With ``max_line_count`` too: words flow from one segment into the next
  of the same speaker, and a cue ends when it has that many lines, when the
  speaker changes, or at a pause of more than 3 s between words.
- ``highlight_words``: each cue is shown once per word, from the word's
  start to its end, with that word underlined (``<u>``); the gaps between
  words show the cue plain.

The width counts what the line shows: where the format puts the speaker's
label in the text (SRT's ``SPEAKER_00: ``), the cue's first line holds that
many characters fewer. (WebVTT's voice tag ``<v SPEAKER_00>`` is markup, not
text, and is not counted.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .._internal.native import _core

LONG_PAUSE = 3.0  # seconds between words that end a flowing cue (Whisper's)
MIN_CUE = 0.5  # seconds a cue of one instant is given, where the time around it is free


@dataclass
class Token:
    """A word (or a wordless segment's whole text) and when it is said."""

    start: float
    end: float
    text: str  # with its leading space, as Whisper writes words


@dataclass
class Cue:
    start: float
    end: float
    speaker: str | None
    lines: list[list[Token]] = field(default_factory=list)

    @property
    def tokens(self) -> list[Token]:
        return [t for line in self.lines for t in line]


def check_options(max_line_width, max_line_count) -> None:
    for name, value in (("max_line_width", max_line_width), ("max_line_count", max_line_count)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _core.OptionError(f"{name} must be a whole number, not {value!r}")
        if value is not None and value < 1:
            raise _core.OptionError(f"{name} must be at least 1, not {value}")
    if max_line_count is not None and max_line_width is None:
        raise _core.OptionError("max_line_count needs max_line_width (lines of what width?)")


def _tokens(segment) -> list[Token]:
    words = getattr(segment, "words", None) or ()
    if words:
        return [Token(float(w.start), float(w.end), w.word) for w in words if w.word.strip()]
    return [Token(float(segment.start), float(segment.end), " " + segment.text.strip())]


def _wrap(tokens: list[Token], width: int, lines: list[list[Token]] | None = None, label: int = 0):
    """Adds ``tokens`` to ``lines`` (the last line may be continued), each
    line at most ``width`` characters once its first token's space goes, the
    first line ``label`` characters fewer (the speaker's label before it)."""
    lines = lines if lines is not None else []
    for token in tokens:
        if lines and lines[-1]:
            used = len("".join(t.text for t in lines[-1]).strip())
            room = width - label if len(lines) == 1 else width
            if used + len(token.text) <= room:
                lines[-1].append(token)
                continue
        lines.append([token])
    return lines


def _without_instants(cues: list[Cue]) -> list[Cue]:
    """No cue of zero duration (a player never shows one, and its text would
    be lost): one that takes no time (a single word Whisper timed as an
    instant) joins the cue before it when that is the same speaker's, else
    the one after; otherwise it is given up to MIN_CUE seconds from the time
    around it that no other cue holds."""
    out: list[Cue] = []
    for k, cue in enumerate(cues):
        if cue.end > cue.start:
            out.append(cue)
            continue
        after = cues[k + 1] if k + 1 < len(cues) else None
        # its words go on the neighbouring cue's line (it said them in passing)
        if out and out[-1].speaker == cue.speaker:
            out[-1].lines[-1] = out[-1].lines[-1] + cue.tokens
            out[-1].end = max(out[-1].end, cue.end)
            continue
        if after is not None and after.speaker == cue.speaker:
            after.lines[0] = cue.tokens + after.lines[0]
            after.start = min(after.start, cue.start)
            continue
        later = after.start if after is not None else cue.start + MIN_CUE
        earlier = out[-1].end if out else 0.0
        cue.end = min(cue.start + MIN_CUE, max(later, cue.start))
        if cue.end <= cue.start:  # the next cue starts at this very instant
            cue.start = max(cue.start - MIN_CUE, min(earlier, cue.start))
        if cue.end > cue.start:
            out.append(cue)
        elif out:  # nothing free on either side: the text goes with the cue before
            out[-1].lines[-1] = out[-1].lines[-1] + cue.tokens
        elif after is not None:
            after.lines[0] = cue.tokens + after.lines[0]
    return out


def build_cues(
    segments: Iterable,
    max_line_width: int | None = None,
    max_line_count: int | None = None,
    label: Callable[[str], str] = lambda speaker: "",
) -> list[Cue]:
    """The cues of ``segments``; ``label(speaker)`` is the text the format
    writes before a cue's first line (counted in its width)."""
    check_options(max_line_width, max_line_count)
    segments = [s for s in segments if s.text.strip()]

    def label_width(speaker) -> int:
        return len(label(speaker)) if speaker else 0

    if max_line_count is None:
        cues = []
        for s in segments:
            tokens = _tokens(s)
            speaker = getattr(s, "speaker", None)
            lines = (
                [tokens]
                if max_line_width is None
                else _wrap(tokens, max_line_width, label=label_width(speaker))
            )
            cues.append(Cue(float(s.start), float(s.end), speaker, lines))
        return _without_instants(cues)
    cues: list[Cue] = []
    for s in segments:
        speaker = getattr(s, "speaker", None)
        for token in _tokens(s):
            cue = cues[-1] if cues else None
            fresh = (
                cue is None
                or cue.speaker != speaker
                or token.start - cue.tokens[-1].end > LONG_PAUSE
            )
            if not fresh:
                lines = _wrap(
                    [token],
                    max_line_width,
                    [list(line) for line in cue.lines],
                    label_width(speaker),
                )
                fresh = len(lines) > max_line_count
            if fresh:
                cues.append(Cue(token.start, token.end, speaker, [[token]]))
            else:
                cue.lines = lines
                cue.end = max(cue.end, token.end)
    return _without_instants(cues)


def _line_text(line: list[Token], escape: Callable[[str], str], underline: Token | None) -> str:
    out = []
    for t in line:
        text = escape(t.text)
        if t is underline:
            bare = text.lstrip()
            text = text[: len(text) - len(bare)] + f"<u>{bare}</u>"
        out.append(text)
    return "".join(out).strip()


def cue_texts(
    cue: Cue, highlight_words: bool, escape: Callable[[str], str] = lambda s: s
) -> list[tuple[float, float, str]]:
    """(start, end, text) of what ``cue`` shows: once, or once per word and
    gap with ``highlight_words``; lines joined with newlines."""

    def text(underline: Token | None = None) -> str:
        return "\n".join(_line_text(line, escape, underline) for line in cue.lines)

    if not highlight_words:
        return [(cue.start, cue.end, text())]
    shown, last = [], cue.start
    for token in cue.tokens:
        if token.start > last:
            shown.append((last, token.start, text()))
        if token.end > token.start:  # a word timed as an instant is never shown alone
            shown.append((token.start, token.end, text(token)))
        last = max(last, token.end)
    if not shown:  # only instants: the cue once, plain
        shown.append((cue.start, cue.end, text()))
    return shown
