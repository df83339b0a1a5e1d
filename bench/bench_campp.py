"""CAM++ speed: saywho's core against 3D-Speaker's model class under torch and
its ONNX graph under onnxruntime, same weights.

All get the same mean-normalised fbank batches of real speech (cut from
tests/data/shared/two_speakers.wav): one 10 s item (a diarization chunk), eight
3 s items and 32 items of 1.5 s (senko's sub-segments). torch runs in its own
venv (bench/make_campp_golden.py --time), with as many threads as saywho, and
exports the network traced on each batch as an ONNX graph (--export; the
venv needs the onnx package), which onnxruntime runs here with as many
intra-op threads. Prints the CPU, seconds per batch (best of --repeat) for
each, saywho's ratio over each (> 1: faster) and the largest difference of
the embeddings from torch's.

    python3 bench/bench_campp.py --torch-python /work/venv-torch/bin/python \
        --speakerlab /tmp/3dspeaker [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from checkout_weights import weights_root

from saywho import _core
from saywho.audio.decode import load_audio
from saywho.diarization.embedding_campp import CamppEmbedding, campp_features

REPO = Path(__file__).resolve().parents[1]
CASES = ((1, 10.0), (8, 3.0), (32, 1.5))  # (items, seconds each)


def batch_of(audio: np.ndarray, items: int, seconds: float) -> np.ndarray:
    n = int(seconds * 16000)
    starts = np.linspace(0, len(audio) - n, items).astype(int)
    feats = np.stack([campp_features(audio[s : s + n]) for s in starts])
    return (feats - feats.mean(axis=1, keepdims=True)).astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch-python", default="/work/venv-torch/bin/python")
    ap.add_argument("--speakerlab", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    checkpoint = weights_root() / "senko" / "campplus_cn_en_common.pt"
    audio = load_audio(REPO / "tests" / "data" / "shared" / "two_speakers.wav")
    sys.path.insert(0, str(REPO / "bench"))
    from machine import describe, force_peers_to_dispatch

    force_peers_to_dispatch()  # a lowered dispatch lowers torch's too

    print(f"{describe()}; {args.threads} threads each")
    print(
        f"{'batch':>14} {'saywho s':>9} {'torch s':>9} {'ratio':>6} {'ORT s':>7} {'ratio':>6} "
        f"{'max diff':>9}"
    )
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    with (
        _core.Runtime(device="cpu", threads=args.threads) as rt,
        CamppEmbedding(checkpoint, rt) as model,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for items, seconds in CASES:
            feats = batch_of(audio, items, seconds)
            model.embed_features(feats[:1])  # warm up
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                ours = model.embed_features(feats)
                best = min(best, time.perf_counter() - t0)
            path = Path(tmp) / "feats.npy"
            np.save(path, feats)
            cmd = [
                args.torch_python,
                str(REPO / "bench" / "make_campp_golden.py"),
                "--speakerlab", args.speakerlab,
                "--checkpoint", str(checkpoint),
                "--time", str(path),
                "--threads", str(args.threads),
                "--repeat", str(args.repeat),
                "--export", str(Path(tmp) / "campp.onnx"),
            ]  # fmt: skip
            peer = json.loads(subprocess.check_output(cmd, text=True).strip().splitlines()[-1])
            theirs = np.load(str(path) + ".out.npy")
            diff = float(np.abs(ours - theirs).max())
            session = ort.InferenceSession(
                str(Path(tmp) / "campp.onnx"), opts, providers=["CPUExecutionProvider"]
            )
            session.run(None, {"feats": feats})  # warm up
            t_ort = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                session.run(None, {"feats": feats})
                t_ort = min(t_ort, time.perf_counter() - t0)
            ratio = peer["seconds"] / best
            label = f"{items} x {seconds:g} s"
            print(
                f"{label:>14} {best:9.3f} {peer['seconds']:9.3f} {ratio:6.2f} {t_ort:7.3f} "
                f"{t_ort / best:6.2f} {diff:9.2g}"
            )


if __name__ == "__main__":
    main()
