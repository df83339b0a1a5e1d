"""Silero VAD v6 speed: saywho's core model against onnxruntime, same file.

The bundled export on real speech (two_speakers.wav repeated to --seconds),
window probabilities only (the timestamp rules are the same Python on both
sides). onnxruntime runs through faster-whisper's own wrapper. Prints each
one's seconds, x realtime, the ratio (> 1: saywho faster) and the largest
difference of the probabilities.

    python3 bench/bench_vad.py [--seconds 600] [--threads 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import saywho  # noqa: E402
from saywho import _core  # noqa: E402
from saywho.audio.vad import SileroVad, default_model_path  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    from faster_whisper.vad import get_vad_model

    data = REPO / "tests" / "data" / "shared"
    speech = saywho.load_audio(data / "two_speakers.wav")
    n = int(16000 * args.seconds) // 512 * 512
    audio = np.resize(speech, n).astype(np.float32)
    runtime = _core.Runtime(device="cpu", threads=args.threads)
    with SileroVad(default_model_path(), runtime) as vad:
        vad.probabilities(audio[: 512 * 64])
        t0 = time.perf_counter()
        ours = vad.probabilities(audio)
        t_ours = time.perf_counter() - t0
    runtime.close()
    model = get_vad_model()
    model(audio[: 512 * 64])
    t0 = time.perf_counter()
    theirs = model(audio).ravel()
    t_ort = time.perf_counter() - t0
    seconds = n / 16000
    print(f"{seconds:.0f} s of speech, {args.threads} threads for saywho")
    print(f"saywho       {t_ours:.3f} s ({seconds / t_ours:.0f}x realtime)")
    print(f"onnxruntime  {t_ort:.3f} s ({seconds / t_ort:.0f}x realtime)")
    print(f"saywho / onnxruntime: {t_ort / t_ours:.2f}x (> 1: saywho faster)")
    print(f"largest difference of the probabilities: {np.abs(ours - theirs).max():.2e}")


if __name__ == "__main__":
    main()
