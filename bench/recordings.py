"""The recordings the speed benches run on, all assembled from the real speech
in tests/data/shared, so a ratio is never the accident of one file:

- "speech": tests/long_recording.py's assembly (the two-speaker
  conversation, Kennedy, the stereo pair, 0.7 s pauses), mostly speech;
- "meeting": a longer, sparser recording: five voices (the conversation's
  two, Kennedy, the stereo pair's two mixed down) at different levels,
  separated by pauses from under a second to 35 s (windows with no speech
  at all), over a faint noise floor, as a meeting recorded on a laptop.

A recording is built once and kept in .cache/bench-audio (ignored), keyed by
its name, length and the sizes of the source files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "shared"
CACHE = REPO / ".cache" / "bench-audio"
SAMPLE_RATE = 16000
# an installed saywho finds the checkout's test weights through this
os.environ.setdefault("SAYWHO_TEST_WEIGHTS", str(REPO / ".cache" / "test-weights"))

NAMES = ("speech", "meeting")
# the meeting is this much longer than the --minutes asked of the speech
MEETING_STRETCH = 1.6

_MEETING_PIECES = ("two_speakers.wav", "jfk.wav", "stereo_two_speakers.wav", "jfk.flac")
_MEETING_PAUSES = (1.5, 12.0, 0.8, 35.0, 4.0, 20.0, 2.5)  # seconds, in turn
_MEETING_GAINS = (1.0, 0.45, 1.5, 0.7)
_NOISE_FLOOR = 0.0008  # about -62 dBFS


def _meeting(minutes: float) -> np.ndarray:
    import saywho

    clips = [saywho.load_audio(DATA / name) for name in _MEETING_PIECES]
    out, total, i = [], 0, 0
    while total < minutes * 60 * SAMPLE_RATE:
        clip = clips[i % len(clips)] * np.float32(_MEETING_GAINS[i % len(_MEETING_GAINS)])
        pause = np.zeros(int(_MEETING_PAUSES[i % len(_MEETING_PAUSES)] * SAMPLE_RATE), np.float32)
        out += [clip, pause]
        total += clip.size + pause.size
        i += 1
    audio = np.concatenate(out)
    noise = np.random.default_rng(0).standard_normal(audio.size).astype(np.float32)
    return audio + noise * np.float32(_NOISE_FLOOR)


def recording(name: str, minutes: float) -> np.ndarray:
    """16 kHz mono float32 samples of recording ``name`` ("speech" or "meeting")."""
    if name not in NAMES:
        raise SystemExit(f"no bench recording {name!r}; there are {', '.join(NAMES)}")
    if name == "speech":
        sys.path.insert(0, str(REPO))
        from tests.long_recording import assemble

        return assemble(DATA, minutes)
    minutes *= MEETING_STRETCH
    sizes = "-".join(str((DATA / p).stat().st_size) for p in _MEETING_PIECES)
    path = CACHE / f"meeting-{minutes:g}min-{sizes}.npy"
    if path.exists():
        return np.load(path)
    audio = _meeting(minutes)
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part.npy")
    np.save(tmp, audio)
    tmp.replace(path)
    return audio


def describe(name: str, audio: np.ndarray) -> str:
    speech = "mostly speech" if name == "speech" else "five voices, pauses up to 35 s"
    return f"{name} ({audio.size / SAMPLE_RATE / 60:.1f} min, {speech})"
