"""Real conversations passed through narrowband channels (tests and bench).

No real telephone call with a trusted reference is reachable from this box
(docs/diarization_quality.md, issue 25), so the telephone condition is
approached from the other side: real conversations (AMI, two_speakers.wav)
squeezed through what a landline does to every voice alike. Each voice keeps
its own words, room and overlap; all of them share the one channel.

Two channels, and they must not be confused:

- ``telephone_band``: a landline as it is: a 4th-order Butterworth band-pass
  at 300-3400 Hz (causal, as a line filter is), 8 kHz sampling, 8-bit G.711
  mu-law, back to 16 kHz.
- ``brick_wall_band``: the same band cut with an FFT brick wall over the
  whole recording. No line does this: the cut at 300 Hz, where the voices'
  pitch lies, rings across the file and spreads each voice into the other's
  turns, which pushes the two voices' embeddings together. It is kept as a
  stand-in for "two voices whose embeddings lie too close for the threshold
  while the segmentation still tells them apart", the failure it reproduces,
  never as a telephone call.
"""

from __future__ import annotations

import numpy as np

RATE = 16000
LOW_HZ, HIGH_HZ = 300.0, 3400.0
MU = 255.0


def _mu_law(x: np.ndarray) -> np.ndarray:
    """8-bit mu-law quantisation and back (G.711's companding, continuous form)."""
    peak = max(float(np.max(np.abs(x))), 1e-9)
    y = np.sign(x) * np.log1p(MU * np.abs(x) / peak) / np.log1p(MU)
    q = np.round(y * 127.0) / 127.0
    return np.sign(q) * np.expm1(np.abs(q) * np.log1p(MU)) / MU * peak


def _through_8k_mu_law(band_limited: np.ndarray) -> np.ndarray:
    """A 16 kHz signal with nothing above 4 kHz -> 8 kHz mu-law -> 16 kHz."""
    coded = _mu_law(band_limited[::2])
    # back to 16 kHz: the 8 kHz spectrum zero-padded (nothing above 4 kHz)
    wide = np.fft.irfft(np.fft.rfft(coded), n=2 * len(coded)) * 2.0
    return wide[: len(band_limited)].astype(np.float32)


def telephone_band(audio: np.ndarray) -> np.ndarray:
    """16 kHz mono float32 -> the same conversation as heard through a
    narrowband G.711 line, back at 16 kHz (the rate the models take)."""
    from scipy.signal import butter, sosfilt  # a test dependency, never saywho's

    sos = butter(4, [LOW_HZ, HIGH_HZ], btype="bandpass", fs=RATE, output="sos")
    return _through_8k_mu_law(sosfilt(sos, np.asarray(audio, dtype=np.float64)))


def brick_wall_band(audio: np.ndarray) -> np.ndarray:
    """The band cut by an FFT brick wall over the whole file, then 8 kHz
    mu-law: not a telephone line (see the module's note)."""
    x = np.asarray(audio, dtype=np.float64)
    spectrum = np.fft.rfft(x)
    freqs = np.fft.rfftfreq(len(x), 1.0 / RATE)
    spectrum[(freqs < LOW_HZ) | (freqs > HIGH_HZ)] = 0
    return _through_8k_mu_law(np.fft.irfft(spectrum, n=len(x)))
