"""ResNet34 speaker-embedding speed: saywho against onnxruntime, same graph.

The network of pyannote 3.1 (WeSpeaker ResNet34) with random weights of the
real shapes (no trained weights are on PyPI), as an ONNX graph for
onnxruntime and folded for saywho; 10 s chunks of real speech, fbank
included in neither timing. Prints each one's seconds per 10 s chunk, the
ratio (> 1: saywho faster), and the largest difference of the embeddings.

    python3 bench/bench_resnet_embedding.py [--chunks 8] [--threads 2]
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
from saywho.diarization.embedding_resnet import ResNetEmbedding, fold_state_dict  # noqa: E402
from tests.test_resnet_embedding import onnx_graph, random_state_dict  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    import onnxruntime as ort

    data = REPO / "tests" / "data" / "shared"
    audio = saywho.load_audio(data / "two_speakers.wav")
    chunks = [audio[16000 * s : 16000 * (s + 10)] for s in range(0, 20, 20 // args.chunks or 1)]
    chunks = (chunks * args.chunks)[: args.chunks]
    features = np.stack([saywho.fbank(c) for c in chunks])
    weights = random_state_dict()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    session = ort.InferenceSession(onnx_graph(weights), options, providers=["CPUExecutionProvider"])
    runtime = _core.Runtime(device="cpu", threads=args.threads)
    with ResNetEmbedding(fold_state_dict(weights), runtime, batch_size=1) as model:
        model.embed_features(features[:1])
        t0 = time.perf_counter()
        ours = model.embed_features(features)
        t_ours = time.perf_counter() - t0
    runtime.close()
    session.run(None, {"fbank": features[:1]})
    t0 = time.perf_counter()
    theirs = np.concatenate([session.run(None, {"fbank": f[None]})[0] for f in features])
    t_ort = time.perf_counter() - t0
    n = len(features)
    print(f"{n} chunks of 10 s, {args.threads} threads")
    print(f"saywho       {t_ours / n:.3f} s per chunk ({10 * n / t_ours:.1f}x realtime)")
    print(f"onnxruntime  {t_ort / n:.3f} s per chunk ({10 * n / t_ort:.1f}x realtime)")
    print(f"saywho / onnxruntime: {t_ort / t_ours:.2f}x (> 1: saywho faster)")
    rel = np.abs(ours - theirs).max() / np.abs(theirs).max()
    print(f"largest difference of the embeddings: {rel:.2e} of their largest value")


if __name__ == "__main__":
    main()
