"""A real conversation passed through a narrowband telephone channel.

No real telephone call with a trusted reference is reachable from this box
(docs/diarization_quality.md, issue 25), so the telephone condition is
approached from the other side: real conversations (AMI, two_speakers.wav)
squeezed through what a landline does to every voice alike: 300-3400 Hz,
8 kHz sampling, 8-bit G.711 mu-law. Each voice keeps its own words, room
and overlap; all of them share the one channel, which is what brings voices
closer in embedding space on a call. It is a simulation of the channel, not a
call: the figures say "telephone band", never "telephone call".
"""

from __future__ import annotations

import numpy as np

RATE = 16000
LOW_HZ, HIGH_HZ = 300.0, 3400.0
MU = 255.0


def _band_limit(x: np.ndarray, rate: int) -> np.ndarray:
    """Everything outside LOW_HZ..HIGH_HZ removed (an FFT brick wall: the
    channel's exact filter shape matters less than the bandwidth it leaves)."""
    spectrum = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(len(x), 1.0 / rate)
    spectrum[(freqs < LOW_HZ) | (freqs > HIGH_HZ)] = 0
    return np.fft.irfft(spectrum, n=len(x))


def _mu_law(x: np.ndarray) -> np.ndarray:
    """8-bit mu-law quantisation and back (G.711's companding, continuous form)."""
    peak = max(float(np.max(np.abs(x))), 1e-9)
    y = np.sign(x) * np.log1p(MU * np.abs(x) / peak) / np.log1p(MU)
    q = np.round(y * 127.0) / 127.0
    return np.sign(q) * np.expm1(np.abs(q) * np.log1p(MU)) / MU * peak


def telephone_band(audio: np.ndarray) -> np.ndarray:
    """16 kHz mono float32 -> the same conversation as heard through a
    narrowband G.711 line, back at 16 kHz (the rate the models take)."""
    x = np.asarray(audio, dtype=np.float64)
    narrow = _band_limit(x, RATE)[::2]  # nothing above 3.4 kHz: 8 kHz sampling is exact
    coded = _mu_law(narrow)
    # back to 16 kHz: the 8 kHz spectrum zero-padded (nothing above 4 kHz)
    wide = np.fft.irfft(np.fft.rfft(coded), n=2 * len(coded)) * 2.0
    return wide[: len(x)].astype(np.float32)
