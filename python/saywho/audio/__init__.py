"""Samples in: decoding any file FFmpeg reads to 16 kHz mono, the features,
speech detection (Silero VAD) and the bundled sample. See docs/audio.md.
"""

from .decode import SAMPLE_RATE, load_audio

__all__ = ["SAMPLE_RATE", "load_audio"]
