"""Transcribing only the speech: the regions (Silero's, saywho.vad) are cut
out and joined, the joined audio is transcribed as one recording, and every
timestamp of the result is moved back to the recording's clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .audio import SAMPLE_RATE


class SpeechMap:
    """Where each stretch of the joined speech lies in the recording.

    ``regions`` are (start, end) seconds, or sample indices with ``in_samples``
    (what Silero's speech timestamps give)."""

    def __init__(self, regions: Sequence[tuple[float, float]], in_samples: bool = False):
        scale = 1 if in_samples else SAMPLE_RATE
        self.samples = [(int(round(a * scale)), int(round(b * scale))) for a, b in regions]
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

    def restore(self, segments: Sequence) -> list:
        """Segments (and their words) of the joined audio, on the recording's
        clock, as faster-whisper restores them: both ends of a word move with
        the stretch that holds its middle (so a word never spans a cut); a
        segment with words runs from its first word to its last."""
        out = []
        for s in segments:
            words = getattr(s, "words", None)
            if words and self.joined_starts:
                moved = []
                for w in words:
                    k = self._stretch((w.start + w.end) / 2)
                    shift = self.origins[k] - self.joined_starts[k]
                    moved.append(
                        replace(w, start=round(w.start + shift, 3), end=round(w.end + shift, 3))
                    )
                out.append(replace(s, start=moved[0].start, end=moved[-1].end, words=moved))
            else:
                start, end = self.to_recording(s.start), self.to_recording(s.end, is_end=True)
                out.append(replace(s, start=start, end=end))
        return out
