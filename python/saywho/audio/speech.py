"""Transcribing only the speech: the regions (Silero's, saywho.audio.vad) are cut
out and joined, the joined audio is transcribed as one recording, and every
timestamp of the result is moved back to the recording's clock.

A long recording's joined speech is never held whole: ``JoinedSpeech`` gives
any stretch of it, copied from the recording (an array or a memmap over the
audio store) when asked for, and Whisper's log-mel reads it a window at a
time (saywho.whisper.windowed_mel), as it reads a recording on disk.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import replace
from itertools import accumulate

import numpy as np

from .decode import SAMPLE_RATE


class SpeechMap:
    """Where each stretch of the joined speech lies in the recording.

    ``regions`` are (start, end) seconds, or sample indices with ``in_samples``
    (what Silero's speech timestamps give). Times move back the way
    faster-whisper's SpeechTimestampsMap moves them, to the same 10 ms: a time
    belongs to the stretch whose joined end (in whole samples) comes after it,
    an end time exactly on a stretch's end to that stretch, and it moves by
    the silence cut before its stretch."""

    def __init__(self, regions: Sequence[tuple[float, float]], in_samples: bool = False):
        scale = 1 if in_samples else SAMPLE_RATE
        self.samples = [(int(round(a * scale)), int(round(b * scale))) for a, b in regions]
        self.joined_ends: list[int] = []  # samples, in the joined audio
        self.silence_before: list[float] = []  # seconds cut before each stretch
        cut = previous_end = 0
        for a, b in self.samples:
            cut += a - previous_end
            previous_end = b
            self.joined_ends.append(b - cut)
            self.silence_before.append(cut / SAMPLE_RATE)
        self.joined_duration = sum(b - a for a, b in self.samples) / SAMPLE_RATE

    def collect(self, samples: np.ndarray) -> np.ndarray:
        """The speech stretches of ``samples``, joined."""
        if not self.samples:
            return np.zeros(0, dtype=np.float32)
        joined = np.concatenate([samples[a:b] for a, b in self.samples])
        return joined.astype(np.float32, copy=False)

    def joined(self, samples: np.ndarray) -> JoinedSpeech:
        """The same, read a stretch at a time (see JoinedSpeech)."""
        return JoinedSpeech(samples, self)

    def _stretch(self, t: float, is_end: bool = False) -> int:
        sample = int(t * SAMPLE_RATE)
        if is_end and sample in self.joined_ends:
            return self.joined_ends.index(sample)
        return min(bisect.bisect(self.joined_ends, sample), len(self.joined_ends) - 1)

    def to_recording(self, t: float, is_end: bool = False, stretch: int | None = None) -> float:
        """A time of the joined audio on the recording's clock (10 ms)."""
        if not self.joined_ends:
            return t
        k = self._stretch(t, is_end) if stretch is None else stretch
        return round(self.silence_before[k] + t, 2)

    def restore(self, segments: Sequence) -> list:
        """Segments (and their words) of the joined audio, on the recording's
        clock, as faster-whisper restores them: both ends of a word move with
        the stretch that holds its middle (so a word never spans a cut); a
        segment with words runs from its first word to its last."""
        out = []
        for s in segments:
            words = getattr(s, "words", None)
            if words and self.joined_ends:
                moved = []
                for w in words:
                    k = self._stretch((w.start + w.end) / 2)
                    start, end = (
                        self.to_recording(w.start, stretch=k),
                        self.to_recording(w.end, stretch=k),
                    )
                    moved.append(replace(w, start=start, end=end))
                out.append(replace(s, start=moved[0].start, end=moved[-1].end, words=moved))
            else:
                start, end = self.to_recording(s.start), self.to_recording(s.end, is_end=True)
                out.append(replace(s, start=start, end=end))
        return out


class JoinedSpeech:
    """What ``SpeechMap.collect(samples)`` gives, without making it: ``size``
    and ``[a:b]`` (float32) as that array's, each slice copied from
    ``samples`` when asked for. For a long recording (and its memmap, which
    this leaves on disk) the stages that read a window at a time then hold a
    window, not the joined speech."""

    def __init__(self, samples: np.ndarray, speech: SpeechMap):
        self.samples = samples
        self.regions = speech.samples
        # where each stretch begins in the joined speech, and its end
        self.starts = [0, *accumulate(b - a for a, b in self.regions)]
        self.size = self.starts[-1]
        self.shape = (self.size,)
        self.dtype = np.dtype(np.float32)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index) -> np.ndarray:
        if not isinstance(index, slice) or index.step not in (None, 1):
            raise TypeError("JoinedSpeech reads [a:b] only")
        a, b, _ = index.indices(self.size)
        parts = []
        k = max(bisect.bisect_right(self.starts, a) - 1, 0)
        while a < b and k < len(self.regions):
            first, last = self.regions[k]
            offset = a - self.starts[k]
            take = min(b - a, last - first - offset)
            parts.append(self.samples[first + offset : first + offset + take])
            a += take
            k += 1
        if not parts:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)
