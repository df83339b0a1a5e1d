"""The recording bundled with the package, so the main job needs no choices."""

from __future__ import annotations

from pathlib import Path


def sample_path() -> Path:
    """Path of the bundled sample: 30 s of two people talking, 16 kHz mono.

    It is pyannote.audio's tutorial sample (MIT licence); see
    ``saywho/data/SOURCES.md``.
    """
    return Path(__file__).resolve().parents[1] / "data" / "two_speakers.wav"
