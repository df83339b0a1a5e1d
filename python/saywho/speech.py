"""Voice activity: transcribe only where someone speaks, keep the clock right.

The speech regions come from pyannote's segmentation model (what WhisperX
does too): the union of the diarization's turns, each widened by ``pad``
seconds, with pauses shorter than ``min_silence`` closed, as faster-whisper
pads and merges Silero's regions (its defaults: 400 ms of padding, 2 s of
silence). The regions are cut out, joined, transcribed as one recording,
and every timestamp of the result is mapped back to the recording's clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from . import _core
from .audio import SAMPLE_RATE


@dataclass(frozen=True)
class VadOptions:
    pad: float = 0.4  # seconds added before and after each stretch of speech
    min_silence: float = 2.0  # shorter pauses stay inside one region

    def __post_init__(self):
        if not (self.pad >= 0 and self.min_silence >= 0):
            raise _core.OptionError("vad pad and min_silence must be >= 0 seconds")


def speech_regions(
    turns: Iterable, duration: float, options: VadOptions = VadOptions()
) -> list[tuple[float, float]]:
    """Sorted, disjoint (start, end) seconds where someone speaks, padded and merged."""
    spans = sorted(
        (max(0.0, t.start - options.pad), min(duration, t.end + options.pad)) for t in turns
    )
    out: list[list[float]] = []
    for start, end in spans:
        if end <= start:
            continue
        if out and start - out[-1][1] < options.min_silence:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


class SpeechMap:
    """Where each stretch of the joined speech lies in the recording."""

    def __init__(self, regions: Sequence[tuple[float, float]]):
        self.samples = [(round(a * SAMPLE_RATE), round(b * SAMPLE_RATE)) for a, b in regions]
        self.joined_starts: list[float] = []  # seconds, in the joined audio
        self.origins: list[float] = []  # seconds, in the recording
        at = 0
        for a, b in self.samples:
            self.joined_starts.append(at / SAMPLE_RATE)
            self.origins.append(a / SAMPLE_RATE)
            at += b - a
        self.joined_duration = at / SAMPLE_RATE

    def collect(self, samples: np.ndarray) -> np.ndarray:
        """The speech stretches of ``samples``, joined."""
        if not self.samples:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate([samples[a:b] for a, b in self.samples]).astype(np.float32)

    def to_recording(self, t: float, is_end: bool = False) -> float:
        """A time of the joined audio on the recording's clock. A time exactly
        where two stretches meet belongs to the earlier one when it ends
        something, to the later one when it starts something."""
        if not self.joined_starts:
            return t
        k = (bisect.bisect_left if is_end else bisect.bisect_right)(self.joined_starts, t) - 1
        k = min(max(k, 0), len(self.joined_starts) - 1)
        return round(self.origins[k] + (t - self.joined_starts[k]), 3)

    def _stretch(self, t: float) -> int:
        k = bisect.bisect_right(self.joined_starts, t) - 1
        return min(max(k, 0), len(self.joined_starts) - 1)

    def span(self, start: float, end: float) -> tuple[float, float]:
        """A word's (start, end) on the recording's clock. A word that runs over
        a cut is cut there: it does not stretch across the silence left out."""
        a, b = self.to_recording(start), self.to_recording(end, is_end=True)
        if self.joined_starts:
            last = self.samples[self._stretch(start)][1] / SAMPLE_RATE
            b = max(a, min(b, round(last, 3)))
        return a, b

    def restore(self, segments: Sequence) -> list:
        """Segments (and their words) of the joined audio, on the recording's clock."""
        out = []
        for s in segments:
            words = getattr(s, "words", None)
            if words:
                words = [
                    replace(w, **dict(zip(("start", "end"), self.span(w.start, w.end))))
                    for w in words
                ]
            start = words[0].start if words else self.to_recording(s.start)
            end = words[-1].end if words else self.to_recording(s.end, is_end=True)
            out.append(replace(s, start=start, end=end, words=words))
        return out
