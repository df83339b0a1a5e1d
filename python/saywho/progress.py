"""A text progress bar for the command line: one line per file, redrawn in place.

It is a ``progress(stage, done, total)`` callback, so it shows every stage
of a run (decode, transcription, diarization, alignment). On a terminal it
redraws at most ten times a second; into a file or pipe it writes one line
per stage when the stage ends, so logs stay readable. ``progress_bar``
gives tqdm.auto's bars instead when tqdm is installed, so that a notebook
draws them as widgets.
"""

from __future__ import annotations

import time
from typing import TextIO

WIDTH = 30


class ProgressBar:
    def __init__(self, label: str, stream: TextIO, interval: float = 0.1):
        self.label = label
        self.stream = stream
        self.interval = interval
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last_draw = 0.0
        self.stage: str | None = None
        self.finished: set[str] = set()
        self.drawn = False

    def __call__(self, stage: str, done: float, total: float) -> None:
        fraction = min(max(done / total, 0.0), 1.0) if total > 0 else 1.0
        finished = fraction >= 1.0
        if self.tty:
            now = time.monotonic()
            if finished or stage != self.stage or now - self.last_draw >= self.interval:
                filled = int(round(WIDTH * fraction))
                bar = "#" * filled + "." * (WIDTH - filled)
                self.stream.write(f"\r{self.label}  {stage:<13} [{bar}] {fraction:4.0%}")
                self.stream.flush()
                self.last_draw = now
                self.drawn = True
        elif finished and stage not in self.finished:
            self.stream.write(f"{self.label}  {stage} done\n")
        self.stage = stage
        if finished:
            self.finished.add(stage)

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


class TqdmProgress:
    """The same callback drawn by tqdm.auto: a widget in a notebook (when
    ipywidgets is there), text on a terminal. One bar per stage, in percent,
    each closed when the next stage starts."""

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
            self.bar = self.tqdm(total=100, desc=f"{self.label} {stage}", unit="%", leave=True)
        percent = int(round(100 * fraction))
        if percent > self.bar.n:
            self.bar.update(percent - self.bar.n)

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
