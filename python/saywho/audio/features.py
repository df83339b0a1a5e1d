"""Model inputs computed by the core: Whisper's log-mel and the Kaldi fbank."""

from __future__ import annotations

import os

import numpy as np

from .._internal.native import _core
from .decode import SAMPLE_RATE, load_audio

#: Whisper works on 30 s windows of 16 kHz audio.
N_SAMPLES = 30 * SAMPLE_RATE


def _samples(audio) -> np.ndarray:
    if isinstance(audio, (str, os.PathLike)):
        return load_audio(audio)
    return np.ascontiguousarray(audio, dtype=np.float32)


def pad_or_trim(samples: np.ndarray, length: int = N_SAMPLES) -> np.ndarray:
    """Zero-pads or cuts the last axis to ``length`` samples, as Whisper does."""
    samples = np.asarray(samples, dtype=np.float32)
    n = samples.shape[-1]
    if n > length:
        return samples[..., :length]
    if n < length:
        pad = [(0, 0)] * (samples.ndim - 1) + [(0, length - n)]
        return np.pad(samples, pad)
    return samples


def log_mel_spectrogram(audio, n_mels: int = 80, padding: int = 0) -> np.ndarray:
    """Whisper's log-mel spectrogram, float32 of shape (n_mels, frames).

    ``audio`` is a path or 16 kHz mono samples; ``padding`` zeros are appended
    first (Whisper's transcribe pads 30 s, ``N_SAMPLES``). ``n_mels`` is 80, or
    128 for large-v3 and turbo.
    """
    return _core.log_mel_spectrogram(_samples(audio), n_mels=n_mels, padding=padding)


def fbank(audio, num_mel_bins: int = 80, subtract_mean: bool = True, **options) -> np.ndarray:
    """Kaldi-style log filterbank of 16 kHz mono audio, (frames, num_mel_bins).

    The defaults are what WeSpeaker and pyannote's embedding models use: 25 ms
    frames every 10 ms, Hamming window, pre-emphasis 0.97, no dither, samples
    scaled by 32768, and the mean of each bin over frames subtracted. Other
    torchaudio ``kaldi.fbank`` options keep their names (``frame_length_ms``,
    ``frame_shift_ms``, ``low_freq``, ``high_freq``, ``preemphasis``,
    ``remove_dc_offset``, ``input_scale``, ``sample_rate``).
    """
    return _core.fbank(
        _samples(audio), num_mel_bins=num_mel_bins, subtract_mean=subtract_mean, **options
    )
