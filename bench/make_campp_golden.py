"""Goldens for CAM++: 3D-Speaker's own model class and front end, under torch.

Runs in a separate venv with torch and torchaudio (never a saywho
dependency):

    python3 -m venv /work/venv-torch
    /work/venv-torch/bin/pip install torch==2.5.1 torchaudio==2.5.1 numpy
    git -C <3D-Speaker mirror> archive HEAD speakerlab | tar -x -C /tmp/3dspeaker
    /work/venv-torch/bin/python bench/make_campp_golden.py --speakerlab /tmp/3dspeaker \
        --checkpoint .cache/test-weights/campp/campplus_cn_en_common.pt

The reference is speakerlab.models.campplus.DTDNN.CAMPPlus (3D-Speaker,
Apache-2.0) loaded with the checkpoint, fed what 3D-Speaker's inference
feeds it (what speakerlab.process.processor.FBank(80, 16000, mean_nor=True)
computes: torchaudio's kaldi.fbank of the [-1, 1] waveform, each bin's mean
removed).
It writes tests/data/campp/golden.json (the chunks: file, start, end) and
golden.npy (their embeddings, float32 [N, 192]).

With --time FEATURES.npy it instead times the reference network on those
features ([B, T, 80]) and prints seconds per call as JSON (bench/bench_campp.py
drives this); --export OUT.onnx also writes the network traced on them as an
ONNX graph, which bench_campp.py times under onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import wave
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "shared"

# Real speech, one speaker or two: (file, start s, end s).
CHUNKS = [
    ("two_speakers.wav", 0.0, 4.0),
    ("two_speakers.wav", 6.69, 7.12),  # 0.43 s, a short turn
    ("two_speakers.wav", 10.57, 14.7),
    ("two_speakers.wav", 15.0, 27.5),  # 12.5 s: more than one context segment
    ("jfk.wav", 0.0, 11.0),
    ("jfk.wav", 3.3, 5.1),
]


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path)) as w:
        assert w.getframerate() == 16000 and w.getsampwidth() == 2, path
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32)
        return x.reshape(-1, w.getnchannels())[:, 0] / 32768.0


def reference(speakerlab: str, checkpoint: str):
    sys.path.insert(0, speakerlab)
    import torchaudio.compliance.kaldi as kaldi
    from speakerlab.models.campplus.DTDNN import CAMPPlus

    model = CAMPPlus(feat_dim=80, embedding_size=192)
    model.load_state_dict(torch.load(checkpoint, map_location="cpu", weights_only=True))
    model.eval()

    def front(wav: torch.Tensor) -> torch.Tensor:
        # the body of speakerlab.process.processor.FBank.__call__ (that module
        # imports 3D-Speaker's training data tools, which need more packages)
        feat = kaldi.fbank(wav[None], num_mel_bins=80, sample_frequency=16000, dither=0)
        return feat - feat.mean(0, keepdim=True)

    return model, front


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--speakerlab", required=True, help="a checkout of 3D-Speaker's speakerlab")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--time", help="features .npy to time the network on")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--export",
        help="with --time: also write the network, traced on those "
        "features, as an ONNX graph here (for onnxruntime in bench_campp.py)",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, front = reference(args.speakerlab, args.checkpoint)
    if args.time:
        x = torch.from_numpy(np.load(args.time))
        with torch.inference_mode():
            model(x[:1])  # warm up
            best = float("inf")
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                out = model(x)
                best = min(best, time.perf_counter() - t0)
        np.save(args.time + ".out.npy", out.numpy())
        if args.export:
            # after the timing (tracing may change what torch runs next);
            # traced on the batch's own shape: the graph onnxruntime runs is
            # that batch's (the context pooling's sizes follow the length)
            torch.onnx.export(model, (x,), args.export, input_names=["feats"],
                              output_names=["embedding"], opset_version=17)  # fmt: skip
        print(json.dumps({"seconds": best, "torch": torch.__version__}))
        return
    rows = []
    with torch.inference_mode():
        for name, start, end in CHUNKS:
            audio = read_wav(DATA / name)[round(start * 16000) : round(end * 16000)]
            feats = front(torch.from_numpy(audio))
            rows.append(model(feats[None])[0].numpy())
    out = REPO / "tests" / "data" / "campp"
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "golden.npy", np.stack(rows).astype(np.float32))
    meta = {
        "reference": "3D-Speaker speakerlab.models.campplus.DTDNN.CAMPPlus + processor.FBank"
        "(80, mean_nor=True)",
        "torch": torch.__version__,
        "checkpoint_sha256": "92f29b94e6948786a26778c9e302525d185bb08c8b9f5252ed98776902840199",
        "chunks": [{"file": n, "start": s, "end": e} for n, s, e in CHUNKS],
    }
    (out / "golden.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {len(rows)} embeddings to {out}")


if __name__ == "__main__":
    main()
