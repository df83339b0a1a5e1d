"""GE2E speaker-encoder speed: saywho's core model against NumPy, same weights.

resemblyzer 0.1.4's real weights on the partials (160 frames, step 80) of
real speech, mel frames included in neither timing. The peer is the same
network written in NumPy float32 (one batched matrix product per LSTM step);
prints each one's seconds, the ratio (> 1: saywho faster) and the largest
difference of the embeddings.

    python3 bench/bench_ge2e.py [--seconds 60] [--threads 2]
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
from saywho.diarization.embedding_ge2e import PARTIAL, GE2EEncoder, load_ge2e  # noqa: E402
from tests.weights import test_diarization_models  # noqa: E402


def numpy_ge2e(w: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """[N, T, 40] -> [N, 256]: the equations, float32, batched over rows."""

    def sig(v):
        return 1.0 / (1.0 + np.exp(-v))

    for layer in range(3):
        w_ih, w_hh = w[f"lstm.weight_ih_l{layer}"], w[f"lstm.weight_hh_l{layer}"]
        b = w[f"lstm.bias_ih_l{layer}"] + w[f"lstm.bias_hh_l{layer}"]
        pre = x @ w_ih.T + b
        h = np.zeros((len(x), 256), np.float32)
        c = np.zeros_like(h)
        out = np.empty((len(x), x.shape[1], 256), np.float32)
        for t in range(x.shape[1]):
            i, f, g, o = np.split(pre[:, t] + h @ w_hh.T, 4, axis=1)
            c = sig(f) * c + sig(i) * np.tanh(g)
            h = sig(o) * np.tanh(c)
            out[:, t] = h
        x = out
    raw = np.maximum(x[:, -1] @ w["linear.weight"].T + w["linear.bias"], 0.0)
    return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    data = REPO / "tests" / "data" / "shared"
    audio = saywho.load_audio(data / "two_speakers.wav")[: int(16000 * args.seconds)]
    weights = load_ge2e(test_diarization_models()[1])
    runtime = _core.Runtime(device="cpu", threads=args.threads)
    with GE2EEncoder(weights, runtime) as model:
        mel, _ = model.features(audio)
        starts = range(0, len(mel) - PARTIAL + 1, PARTIAL // 2)
        partials = np.stack([mel[s : s + PARTIAL] for s in starts])
        model.embed_partials(partials[:2])
        t0 = time.perf_counter()
        ours = model.embed_partials(partials)
        t_ours = time.perf_counter() - t0
    runtime.close()
    t0 = time.perf_counter()
    theirs = numpy_ge2e(weights, partials)
    t_np = time.perf_counter() - t0
    seconds = len(audio) / 16000
    print(f"{len(partials)} partials of {PARTIAL} frames from {seconds:.0f} s of speech")
    print(f"saywho  {t_ours:.3f} s ({seconds / t_ours:.1f}x realtime)")
    print(f"numpy   {t_np:.3f} s ({seconds / t_np:.1f}x realtime)")
    print(f"saywho / numpy: {t_np / t_ours:.2f}x (> 1: saywho faster)")
    print(f"largest difference of the embeddings: {np.abs(ours - theirs).max():.2e}")


if __name__ == "__main__":
    main()
