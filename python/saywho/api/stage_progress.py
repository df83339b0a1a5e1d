"""A text progress line for the command line: one line per file, redrawn in place.

It is a ``progress(stage, done, total)`` callback, so it shows every stage
of a run (decode, diarization, transcription, alignment): the stage, the
whole file's share done, the time elapsed and an estimate of the time left.
The whole file's share weighs each stage by the rough part of a run it takes
(``STAGE_WEIGHTS``), so the ETA is an estimate and says so (``ETA ~``). On a
terminal it redraws at most ten times a second; into a file or pipe it
writes one line per stage when the stage ends, with the seconds the stage
itself took, so logs stay readable. Log records written while a line is
drawn (``LineAwareHandler``) get their own lines.

``progress_bar`` gives tqdm.auto's bars instead when tqdm is installed, so
that a notebook draws them as widgets: one per stage, closed when the stage
ends, so its time is the stage's own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import TextIO

WIDTH = 30
# the rough share of a run's time each stage takes (CPU, a small Whisper and
# the bundled diarization models); a stage not named here weighs OTHER_WEIGHT
STAGE_WEIGHTS = {
    "decode": 0.02,
    "diarization": 0.35,
    "known speakers": 0.02,
    "transcribe": 0.6,
    "alignment": 0.01,
}
OTHER_WEIGHT = 0.05
CLEAR_LINE = "\r\x1b[K"
# below this share of the file done an ETA would be a guess from nothing
ETA_AFTER = 0.02


def run_stages(diarize: bool, known_speakers: bool) -> list[str]:
    """The stages a file goes through, in order: a ProgressBar's ``stages``."""
    return [
        "decode",
        *(["diarization"] if diarize else []),
        *(["known speakers"] if known_speakers else []),
        "transcribe",
        *(["alignment"] if diarize else []),
    ]


def clock(seconds: float) -> str:
    """``H:MM:SS``."""
    seconds = int(round(max(seconds, 0.0)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


class LiveLine:
    """Where a line redrawn in place on a terminal registers itself while it
    is drawn (``drawing``: an object with ``stream``, ``drawn``, ``clear()``
    and ``draw()``), so that a log record is never glued onto it."""

    drawing = None


class ProgressBar:
    """``ProgressBar(label, stream, stages=...)``: ``stages`` are the stages
    the run will go through (default: all of STAGE_WEIGHTS), for the whole
    file's share."""

    def __init__(
        self,
        label: str,
        stream: TextIO,
        interval: float = 0.1,
        stages: Iterable[str] | None = None,
    ):
        self.label = label
        self.stream = stream
        self.interval = interval
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.weights = {s: STAGE_WEIGHTS.get(s, OTHER_WEIGHT) for s in (stages or STAGE_WEIGHTS)}
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.stage: str | None = None
        self.stage_start = self.start
        self.stage_fraction = 0.0
        self.finished: dict[str, float] = {}  # stage -> its own seconds
        self.drawn = False

    def overall(self) -> float:
        """The whole file's share done, by the stages' weights."""
        total = sum(self.weights.values())
        done = sum(self.weights.get(s, OTHER_WEIGHT) for s in self.finished)
        if self.stage is not None and self.stage not in self.finished:
            done += self.weights.get(self.stage, OTHER_WEIGHT) * self.stage_fraction
        return min(done / total, 1.0) if total > 0 else 1.0

    def timing(self, now: float) -> str:
        elapsed = now - self.start
        share = self.overall()
        if share >= 1.0:
            return f"{clock(elapsed)} elapsed"
        eta = clock(elapsed * (1 - share) / share) if share >= ETA_AFTER else "?"
        return f"{clock(elapsed)} elapsed, ETA ~{eta}"

    def __call__(self, stage: str, done: float, total: float) -> None:
        now = time.monotonic()
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
        if stage != self.stage:
            self.stage, self.stage_start = stage, now
            self.weights.setdefault(stage, STAGE_WEIGHTS.get(stage, OTHER_WEIGHT))
        self.stage_fraction = fraction
        ended = fraction >= 1.0 and stage not in self.finished
        if ended:
            self.finished[stage] = now - self.stage_start
        if self.tty:
            if ended or now - self.last_draw >= self.interval or not self.drawn:
                self.draw(now)
        elif ended:
            self.stream.write(
                f"{self.label}  {stage} done in {self.finished[stage]:.1f} s "
                f"({self.overall():.0%}, {self.timing(now)})\n"
            )
            self.stream.flush()

    def draw(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        share = self.overall()
        filled = int(round(WIDTH * share))
        bar = "#" * filled + "." * (WIDTH - filled)
        self.stream.write(
            f"{CLEAR_LINE}{self.label}  {self.stage or '':<13} [{bar}] {share:4.0%}  "
            f"{self.timing(now)}"
        )
        self.stream.flush()
        self.last_draw = now
        self.drawn = True
        LiveLine.drawing = self

    def clear(self) -> None:
        """Wipes the drawn line (a log record is about to be written)."""
        if self.tty and self.drawn:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self.drawn = False

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = False
        if LiveLine.drawing is self:
            LiveLine.drawing = None


class LineAwareHandler(logging.StreamHandler):
    """A log handler that never glues a record onto a progress line: the
    line being drawn on the same stream is wiped first, the record written
    on its own line, and the progress line drawn again below it."""

    def emit(self, record: logging.LogRecord) -> None:
        bar = LiveLine.drawing
        same = bar is not None and bar.stream is self.stream and bar.drawn
        if same:
            bar.clear()
        super().emit(record)
        if same:
            bar.draw()


class TqdmProgress:
    """The same callback drawn by tqdm.auto: a widget in a notebook (when
    ipywidgets is there), text on a terminal. One bar per stage, in percent,
    each closed as soon as its stage ends, so the time it shows is the
    stage's own (not the gap before the next stage)."""

    BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]"

    def __init__(self, label: str, tqdm):
        self.label = label
        self.tqdm = tqdm
        self.bar = None
        self.stage: str | None = None

    def __call__(self, stage: str, done: float, total: float) -> None:
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
        if stage != self.stage:
            self.close()
            self.stage = stage
            self.bar = self.tqdm(
                total=100, desc=f"{self.label} {stage}", leave=True, bar_format=self.BAR_FORMAT
            )
        if self.bar is None:  # this stage has ended already
            return
        percent = int(round(100 * fraction))
        if percent > self.bar.n:
            self.bar.update(percent - self.bar.n)
        if fraction >= 1.0:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress_bar(label: str, stream: TextIO | None = None):
    """A progress callback for ``process(progress=True)``: tqdm.auto's bars
    when tqdm is installed (they draw in Jupyter), else :class:`ProgressBar`
    on ``stream`` (default stderr). tqdm is never a dependency."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        import sys

        return ProgressBar(label, stream or sys.stderr)
    return TqdmProgress(label, tqdm)
