"""One progress line for a whole batch: audio done of the total, and an ETA.

The total is known before the run only roughly: a WAV file's header gives
its duration (its data's size over the byte rate its fmt chunk states,
whatever the sample format: the standard library's ``wave`` reads only
integer PCM, and a 32-bit float file guessed from its size came out 4x), any other file is estimated from its size (at 128 kbit/s,
what compressed speech commonly is) until it finishes and its real
duration replaces the guess. The ETA is the audio left over the speed so
far. On a terminal the line is redrawn in place; into a log (or with
``redraw=False``, as ``saywho`` does for several files under each file's own
progress line) it writes one line per file.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
from typing import TextIO

from ..api.stage_progress import CLEAR_LINE, LiveLine, clock

WIDTH = 30
BYTES_PER_SECOND_GUESS = 16000  # 128 kbit/s


def wav_duration(path: str) -> float | None:
    """Seconds in a RIFF/WAVE file (any sample format), or None when it is not one."""
    with open(path, "rb") as f:
        riff = f.read(12)
        if len(riff) < 12 or riff[:4] != b"RIFF" or riff[8:12] != b"WAVE":
            return None
        byte_rate = None
        while True:
            header = f.read(8)
            if len(header) < 8:
                return None
            kind, size = header[:4], struct.unpack("<I", header[4:])[0]
            if kind == b"fmt ":
                fmt = f.read(size + (size & 1))
                if len(fmt) < 16:
                    return None
                byte_rate = struct.unpack("<I", fmt[8:12])[0]
            elif kind == b"data":
                if not byte_rate:
                    return None
                # a streamed WAV may say 0 or 0xFFFFFFFF: the file's rest is the data
                left = os.fstat(f.fileno()).st_size - f.tell()
                if size in (0, 0xFFFFFFFF) or size > left:
                    size = left
                return size / byte_rate
            else:
                f.seek(size + (size & 1), os.SEEK_CUR)


def estimated_duration(path: str) -> float:
    """Seconds of audio in ``path``, from a WAV header or from its size."""
    with contextlib.suppress(OSError, struct.error):
        seconds = wav_duration(path)
        if seconds is not None:
            return seconds
    try:
        return os.path.getsize(path) / BYTES_PER_SECOND_GUESS
    except OSError:
        return 0.0


class BatchProgress:
    def __init__(
        self, estimates: dict[str, float], stream: TextIO | None, redraw: bool | None = None
    ):
        self.estimates = dict(estimates)
        self.stream = stream
        tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.tty = tty if redraw is None else redraw
        self.done_audio = 0.0
        self.files = 0
        self.errors = 0
        self.start = time.perf_counter()
        self.line = ""  # the line drawn on a terminal, to draw again after a log record
        self.drawn = False

    @property
    def total_audio(self) -> float:
        return self.done_audio + sum(self.estimates.values())

    def eta(self) -> float | None:
        elapsed = time.perf_counter() - self.start
        if self.done_audio <= 0 or elapsed <= 0:
            return None
        return sum(self.estimates.values()) * elapsed / self.done_audio

    def finished(self, path: str, duration: float | None, status: str) -> None:
        # the real duration replaces the guess; a failed file leaves the total
        self.estimates.pop(path, None)
        self.done_audio += duration if duration is not None else 0.0
        self.files += 1
        self.errors += status != "ok"
        if self.stream is None:
            return
        total = self.total_audio
        fraction = self.done_audio / total if total > 0 else 1.0
        eta = self.eta()
        elapsed = time.perf_counter() - self.start
        summary = (
            f"{self.done_audio / 60:.1f}/{total / 60:.1f} min of audio, {self.files} files"
            f" ({self.errors} errors), {clock(elapsed)} elapsed,"
            f" ETA {clock(eta) if eta is not None else '?'}"
        )
        if self.tty:
            filled = int(round(WIDTH * fraction))
            bar = "#" * filled + "." * (WIDTH - filled)
            self.line = f"[{bar}] {fraction:4.0%} {summary}"
            self.draw()
        else:
            self.stream.write(f"{status:5} {path}  [{fraction:4.0%} {summary}]\n")
        self.stream.flush()

    def draw(self) -> None:
        """(Re)draws the line in place; saywho.api.stage_progress.LineAwareHandler
        wipes it before a log record and calls this after."""
        self.stream.write(f"{CLEAR_LINE}{self.line}")
        self.stream.flush()
        self.drawn = True
        LiveLine.drawing = self

    def clear(self) -> None:
        if self.drawn:
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self.drawn = False

    def close(self) -> None:
        if self.tty and self.files:
            if not self.drawn:
                self.draw()
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = False
        if LiveLine.drawing is self:
            LiveLine.drawing = None
