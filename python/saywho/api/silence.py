"""Silence is silent: process() keeps no Whisper text where nobody spoke.

Whisper writes something for silence and faint noise ("You", " ."). On 30 s
of digital silence its no-speech probability is about 0.9, yet the words it
writes keep an average log probability above -1, so faster-whisper's rule,
which drops a window only when both no_speech_prob > 0.6 and avg_logprob <
-1, keeps them; faster-whisper's answer is vad_filter, off by default.
process() therefore asks a speech detector before it trusts Whisper: the
diarization's own speech turns when it diarizes (segmentation-3.0 is
pyannote's voice activity detector), Silero VAD with faster-whisper's
defaults when it only transcribes. Then

- with no speech anywhere, Whisper does not run at all: no text, and no
  minute of temperature fallback spent on noise;
- otherwise Whisper runs on the whole recording as faster-whisper would
  (the same tokens), and a segment is dropped only when Whisper itself
  rated it likely silent (no_speech_prob above its no_speech_threshold,
  0.6) and no speech region overlaps it. A segment the detector missed but
  Whisper heard as speech is kept.
"""

from __future__ import annotations

import numpy as np

from ..audio.decode import SAMPLE_RATE
from ..audio.vad import speech_sample_regions
from ..audio.vad import vad_options as checked_vad_options


def speech_regions(samples: np.ndarray, runtime, vad_options=None) -> list[tuple[float, float]]:
    """(start, end) seconds of the speech Silero VAD finds, faster-whisper's way."""
    found = speech_sample_regions(samples, runtime, checked_vad_options(vad_options))
    return [(start / SAMPLE_RATE, end / SAMPLE_RATE) for start, end in found]


def heard(start: float, end: float, regions: list[tuple[float, float]]) -> bool:
    """Whether any region overlaps [start, end] (a zero-length span counts at its point)."""
    return any(s < end and start < e or s <= start < e for s, e in regions)


def drop_silent(segments, regions, no_speech_threshold: float | None) -> list:
    """The segments that are speech: those Whisper rated speech, and those
    some region overlaps. A threshold of None keeps every segment, as it
    turns faster-whisper's own check off."""
    if no_speech_threshold is None:
        return list(segments)
    kept = []
    for s in segments:
        words = getattr(s, "words", None) or ()
        # the words' times where there are words: they follow the audio more
        # closely than the segment's timestamp tokens
        start = min((w.start for w in words), default=s.start)
        end = max((w.end for w in words), default=s.end)
        if s.no_speech_prob <= no_speech_threshold or heard(start, end, regions):
            kept.append(s)
    return kept
