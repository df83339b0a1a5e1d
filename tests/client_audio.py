"""Audio as a client uploads it: 16-bit PCM WAV bytes of float samples."""

from __future__ import annotations

import io
import wave

import numpy as np

import saywho


def wav_bytes(samples: np.ndarray) -> bytes:
    """Mono 16-bit WAV at saywho's rate; samples clipped to [-1, 1]."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(saywho.SAMPLE_RATE)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return buf.getvalue()
