"""What both transcription modes share: the window's numbers, the result
types, and how a window's tokens become timed segments.

sequential.py and seek_loop.py (the sequential mode) and batched.py (the
batched mode) both import from here; neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..audio.decode import SAMPLE_RATE, load_audio
from .generate import TIME_PRECISION
from .options import TranscribeOptions

HOP_LENGTH = 160
N_FRAMES = 3000  # one 30 s window of log-mel frames
INPUT_STRIDE = 2  # encoder frames per timestamp step: mel frames / 1500
TIME_PER_FRAME = HOP_LENGTH / SAMPLE_RATE
MAX_LENGTH = 448


@dataclass
class Word:
    """A word with its time in the recording and the model's confidence."""

    start: float
    end: float
    word: str
    probability: float


@dataclass
class Segment:
    """One transcribed segment, with faster-whisper's fields."""

    id: int
    seek: int
    start: float
    end: float
    text: str
    tokens: list[int]
    avg_logprob: float
    compression_ratio: float
    no_speech_prob: float
    temperature: float
    words: list[Word] | None = None
    # the language the segment was decoded in, with multilingual=True (each
    # window or chunk its own); None otherwise (TranscriptionInfo's holds)
    language: str | None = None


@dataclass
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: list[tuple[str, float]] | None
    options: TranscribeOptions  # as decoded: suppress_tokens resolved
    performance: dict | None = None


def audio_samples(audio) -> tuple[np.ndarray, float]:
    """A path's decoded samples or the array given, as contiguous float32
    (what both modes transcribe), and their seconds."""
    samples = audio if isinstance(audio, np.ndarray) else load_audio(audio)
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    return samples, samples.size / SAMPLE_RATE


def pad_window(window: np.ndarray) -> np.ndarray:
    if window.shape[-1] >= N_FRAMES:
        return np.ascontiguousarray(window[:, :N_FRAMES])
    return np.pad(window, ((0, 0), (0, N_FRAMES - window.shape[-1])))


def split_by_timestamps(tokens, timestamp_begin, time_offset, segment_size, duration, seek):
    """Cuts a window's tokens at timestamp pairs; returns the pieces and the next seek.

    A window that ends on a single timestamp had no speech after it, so the
    next window starts after this one; otherwise it starts at the last
    timestamp pair, and the unfinished text after it is decoded again.
    """
    pieces = []
    single_ending = len(tokens) >= 2 and tokens[-2] < timestamp_begin <= tokens[-1]
    pairs = [
        i
        for i in range(1, len(tokens))
        if tokens[i] >= timestamp_begin and tokens[i - 1] >= timestamp_begin
    ]
    if pairs:
        cuts = pairs + ([len(tokens)] if single_ending else [])
        last = 0
        for cut in cuts:
            piece = tokens[last:cut]
            pieces.append(
                {
                    "start": time_offset + (piece[0] - timestamp_begin) * TIME_PRECISION,
                    "end": time_offset + (piece[-1] - timestamp_begin) * TIME_PRECISION,
                    "tokens": piece,
                }
            )
            last = cut
        if single_ending:
            seek += segment_size
        else:
            seek += (tokens[last - 1] - timestamp_begin) * INPUT_STRIDE
    else:
        stamps = [tok for tok in tokens if tok >= timestamp_begin]
        if stamps and stamps[-1] != timestamp_begin:
            duration = (stamps[-1] - timestamp_begin) * TIME_PRECISION
        pieces.append({"start": time_offset, "end": time_offset + duration, "tokens": tokens})
        seek += segment_size
    return pieces, seek, single_ending
