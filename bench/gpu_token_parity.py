"""Whisper's tokens on the GPU against the CPU's, without real weights: the
one Whisper correctness check a lent GPU can run when the test weights do
not travel (they do not fit in what a call carries). A random-weight
checkpoint of a real shape (bench/make_shape_checkpoint.py) is decoded by
saywho on the CPU and on the device, float32 on both, greedy, beam 5 and
batched, with the same forced token count as bench/bench_gpu.py; any window
whose tokens differ is named with its first differing position, and the
exit status is 1.

    python3 bench/gpu_token_parity.py [--model base-shape] [--device cuda]
        [--windows 2] [--tokens 50] [--modes greedy beam5 batched]

Random weights leave the top two logits about a fifth of a unit apart, so
float32 rounding differences (1e-5) flip a token only rarely: identical
tokens are the expected outcome, and a difference is worth reading.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from bench_gpu import DEFAULT_CHECKPOINTS, clips, forced, vocabulary_of, windows_audio  # noqa: E402

MODES = {"greedy": (1, False), "beam5": (5, False), "batched": (5, True)}


def decode(path: str, device: str, audio, n: int, tokens: int, mode: str) -> list:
    """Each window's tokens."""
    from saywho.whisper import BatchedInferencePipeline
    from saywho.whisper.transcribe import WhisperModel

    beam, batched = MODES[mode]
    eot, multilingual = vocabulary_of(path)
    options = {**forced(tokens, eot, multilingual), "beam_size": beam}
    with WhisperModel(path, device=device, compute_type="float32") as model:
        if batched:
            pipeline = BatchedInferencePipeline(model)
            segments, _ = pipeline.transcribe(
                audio, batch_size=n, vad_filter=False, clip_timestamps=clips(n), **options
            )
        else:
            segments, _ = model.transcribe(audio, **options)
        return [list(s.tokens) for s in segments]


def compare(cpu: list, device: list) -> dict:
    out = {"windows": len(cpu), "identical": cpu == device}
    for w, (a, b) in enumerate(zip(cpu, device)):
        if a != b:
            at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            out["first_difference"] = {"window": w, "position": at, "cpu": a[at : at + 3], "device": b[at : at + 3]}  # fmt: skip
            break
    if len(cpu) != len(device):
        out["window_counts"] = [len(cpu), len(device)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="base-shape")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--windows", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--modes", nargs="+", choices=sorted(MODES), default=list(MODES))
    ap.add_argument("--checkpoints", type=Path, default=DEFAULT_CHECKPOINTS)
    args = ap.parse_args()
    from make_shape_checkpoint import make_checkpoint

    out = make_checkpoint(args.model, args.checkpoints / args.model.removesuffix("-shape"), formats=["hf"])  # fmt: skip
    path = str(out / "hf")
    audio = windows_audio(args.windows)
    report = {"model": args.model, "device": args.device, "tokens": args.tokens}
    for mode in args.modes:
        cpu = decode(path, "cpu", audio, args.windows, args.tokens, mode)
        device = decode(path, args.device, audio, args.windows, args.tokens, mode)
        report[mode] = compare(cpu, device)
    print(json.dumps(report))
    return 0 if all(report[m]["identical"] for m in args.modes) else 1


if __name__ == "__main__":
    sys.exit(main())
