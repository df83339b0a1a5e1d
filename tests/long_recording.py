"""A recording of several minutes assembled from the real speech in
tests/data/shared, for tests and benchmarks that need more than one 30 s window.

The pieces alternate speakers and recordings with 0.7 s of silence between
them, so Whisper has to seek across window boundaries as on a real talk.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np

import saywho

PIECES = ("two_speakers.wav", "jfk.wav", "stereo_two_speakers.wav", "jfk.flac")
GAP_SECONDS = 0.7
# two_speakers, a pause, jfk, a pause: 42.4 s, the shortest that needs two windows
SHORT_MINUTES = 0.6


def assemble(data_dir: Path, minutes: float) -> np.ndarray:
    """16 kHz mono samples at least ``minutes`` long, the same every time."""
    clips = [saywho.load_audio(data_dir / name) for name in PIECES]
    gap = np.zeros(int(GAP_SECONDS * 16000), dtype=np.float32)
    out, total, i = [], 0, 0
    while total < minutes * 60 * 16000:
        clip = clips[i % len(clips)]
        out += [clip, gap]
        total += clip.size + gap.size
        i += 1
    return np.concatenate(out)


def with_noise_gap(samples: np.ndarray, at_seconds: float = 40.0, seconds: float = 8.0):
    """``samples`` with a stretch of faint noise inserted: a pause where Whisper
    tends to invent words, for the hallucination guard."""
    rng = np.random.default_rng(0)
    noise = (rng.standard_normal(int(seconds * 16000)) * 0.003).astype(np.float32)
    cut = int(at_seconds * 16000)
    return np.concatenate([samples[:cut], noise, samples[cut:]])


def write_long_flac(data_dir: Path, path: Path, minutes: float) -> None:
    """``minutes`` of the real speech in ``data_dir``, in turn with pauses
    (as ``assemble``), encoded as a FLAC file by FFmpeg (as a user would have
    one), written a clip at a time so this process never holds it whole."""
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        raise RuntimeError("ffmpeg is needed to write the long recording")
    clips = [saywho.load_audio(data_dir / name) for name in PIECES]
    gap = np.zeros(int(GAP_SECONDS * 16000), dtype=np.float32)
    encoder = subprocess.Popen(
        [ffmpeg, "-v", "error", "-y", "-f", "f32le", "-ar", "16000", "-ac", "1", "-i", "-"]
        + [str(path)],
        stdin=subprocess.PIPE,
    )
    total, i = 0, 0
    while total < minutes * 60 * 16000:
        clip = clips[i % len(clips)]
        encoder.stdin.write(clip.tobytes() + gap.tobytes())
        total += clip.size + gap.size
        i += 1
    encoder.stdin.close()
    if encoder.wait(timeout=600) != 0:
        raise RuntimeError(f"ffmpeg could not write {path}")
