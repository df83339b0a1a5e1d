"""How much float32 arithmetic the default diarization does, and the least
time that arithmetic can take on this machine.

Issue 11 asks for saywho 10x faster than pyannote.audio on the same models
at pyannote's 1 s step. Both engines owe the same multiply-adds, which the
models fix: segmentation-3.0 over a 10 s window every second, CAM++ over
every fbank frame of every (chunk, speaker) embedding. This script runs
saywho's default diarization on each bench recording, takes the windows and
the embedded frames from the run itself, counts the multiply-adds from the
two architectures (only the products; the elementwise work, the pooling and
CAM++'s context masks are left out, so the count is a floor), and times the
fastest float32 product this machine runs: NumPy's OpenBLAS sgemm on large
square matrices, at the same thread count and with the kernels of saywho's
dispatch (SAYWHO_CPU_DISPATCH). The work divided by that rate is the least
time any engine doing these products can take; beside it saywho's time and,
with --peer-python, pyannote.audio's from the same go (bench/pyannote_peer_run.py).

The count credits the products saywho does not do: SincNet's first layer
once per recording (not per window: docs/segmentation.md), CAM++'s six
3x3 stride-1 convolutions at Winograd's 16/36 and its three stride-2 ones
at 12/18 (cpu_winograd.h).

    python3 bench/diarization_work.py [--threads 2] [--minutes 2] \
        [--recordings two,meeting] [--peer-python PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path


def _numpy_kernels(threads: int) -> None:
    """NumPy's OpenBLAS at saywho's kernels and thread count: set before
    NumPy loads (saywho's blas_kernels.py read as a file, not imported, since
    importing saywho loads NumPy)."""
    spec = importlib.util.find_spec("saywho")
    path = Path(spec.submodule_search_locations[0]) / "_internal" / "blas_kernels.py"
    loader = importlib.util.spec_from_file_location("_saywho_blas_kernels", path)
    blas = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(blas)
    kernels = blas.core_kernels()
    if kernels:
        os.environ["OPENBLAS_CORETYPE"] = kernels
    else:
        os.environ.pop("OPENBLAS_CORETYPE", None)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)


SR = 16000

# segmentation-3.0 (pyannote's PyanNet): SincNet (80 sinc filters of 251 taps
# every 10 samples; conv 80 -> 60 and 60 -> 60 of 5 taps; max pools of 3),
# 4 bidirectional LSTM layers of 128, linear 256 -> 128 -> 128 -> 7
SINC_FILTERS, SINC_TAPS, SINC_STRIDE, POOL = 80, 251, 10, 3
CONV_TAPS, CONV_CHANNELS, HIDDEN, LAYERS = 5, 60, 128, 4


def _frames(n: int, taps: int, stride: int = 1) -> int:
    return (n - taps) // stride + 1


def segmentation_macs(window: int) -> tuple[int, int]:
    """(per window without SincNet's first layer, that layer per sample)"""
    t = _frames(_frames(window, SINC_TAPS, SINC_STRIDE), POOL, POOL)
    macs = 0
    for c_in in (SINC_FILTERS, CONV_CHANNELS):
        t = _frames(t, CONV_TAPS)
        macs += t * c_in * CONV_TAPS * CONV_CHANNELS
        t = _frames(t, POOL, POOL)
    for layer in range(LAYERS):  # two directions, 4 gates: input and recurrent products
        c_in = CONV_CHANNELS if layer == 0 else 2 * HIDDEN
        macs += 2 * t * (c_in + HIDDEN) * 4 * HIDDEN
    macs += t * (2 * HIDDEN * 128 + 128 * 128 + 128 * 7)
    first_per_sample = SINC_FILTERS * SINC_TAPS / SINC_STRIDE
    return macs, int(first_per_sample)


# CAM++ (3D-Speaker's CAMPPlus, 80 bins): the 2-D front (32 channels of 3x3
# over 80 rows: conv1 1 -> 32; two residual pairs at 40 rows and two at 20, the
# first conv of each pair stride 2 in frequency with a 1x1 shortcut; conv2 to
# 10 rows), then at half the frames a TDNN 320 -> 128 of 5 taps and three dense
# blocks of 12, 24 and 16 layers (bottleneck c -> 128, then 128 -> 32 of 3
# taps; c grows by 32 a layer) with transitions 512 -> 256, 1024 -> 512 and
# 1024 -> 512, stats pooling and 1024 -> 192 per item
HEAD, GROWTH, BOTTLE = 32, 32, 128
WINOGRAD = 16 / 36  # F(2x2, 3x3): 16 multiplies where 36 were
STRIDED = 12 / 18  # F(2, 3) along the frames, rows halved: 12 where 18 were


def campp_macs_per_frame() -> float:
    conv = 9 * HEAD * HEAD
    front = 80 * 9 * HEAD  # conv1
    for rows in (40, 20):
        front += rows * (conv * STRIDED + HEAD * HEAD)  # the strided conv and its shortcut
        front += 3 * rows * conv * WINOGRAD  # the other three, by Winograd
    front += 10 * conv * STRIDED  # conv2 to 10 rows
    half = 320 * 5 * BOTTLE  # the TDNN, per output (half) frame
    channels = BOTTLE
    for layers, transit in ((12, 256), (24, 512), (16, 512)):
        for _ in range(layers):
            half += channels * BOTTLE + BOTTLE * 3 * GROWTH
            channels += GROWTH
        half += channels * transit
        channels = transit
    return front + half / 2


def campp_macs_per_item() -> int:
    return 1024 * 192


def sgemm_rate(np, threads: int) -> float:
    """float32 multiply-adds a second of NumPy's OpenBLAS on 3072^2 matrices."""
    n = 3072
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(5))
    return n**3 / best


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=2.0, help="the meeting's, before stretch")
    ap.add_argument("--recordings", default="two,meeting")
    ap.add_argument("--peer-python", help="also time pyannote.audio in this bench venv")
    args = ap.parse_args()
    _numpy_kernels(args.threads)

    import numpy as np

    repo = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(repo / "bench"))
    from bench_diarization_speed import audio_of
    from bench_pyannote_peer import WARMUP, run_peer
    from machine import describe, force_peers_to_dispatch

    from saywho import _core
    from saywho.diarization import embedding_campp
    from saywho.diarization.diarize import WINDOW, Diarizer
    from saywho.models.bundled import resolve_embedding, resolve_segmentation

    force_peers_to_dispatch()
    counted = {"frames": 0, "items": 0}
    embed = embedding_campp.CamppEmbedding.embed_sequences

    def counting(self, sequences):
        counted["frames"] += sum(len(s) for s in sequences)
        counted["items"] += len(sequences)
        return embed(self, sequences)

    embedding_campp.CamppEmbedding.embed_sequences = counting
    rate = sgemm_rate(np, args.threads)
    seg_window, sinc_sample = segmentation_macs(int(WINDOW * SR))
    per_frame = campp_macs_per_frame()
    print(f"{describe()}; {args.threads} threads; NumPy's sgemm (3072^2, "
          f"{os.environ.get('OPENBLAS_CORETYPE', 'its own kernels')}) "
          f"{2 * rate / 1e9:.0f} GFLOP/s")  # fmt: skip
    print(f"segmentation-3.0: {seg_window / 1e9:.3f} G multiply-adds a window (after SincNet's "
          f"first layer, {sinc_sample} a sample); CAM++: {per_frame / 1e6:.2f} M a frame")  # fmt: skip
    seg, emb = resolve_segmentation(None), resolve_embedding(None)
    rows = []
    with _core.Runtime(device="cpu", threads=args.threads) as rt, Diarizer(seg, emb, rt) as d:
        for name in args.recordings.split(","):
            label, audio = audio_of(name, args.minutes)
            dur = len(audio) / SR
            d(audio[: int(WARMUP * SR)])
            counted.update(frames=0, items=0)
            t0 = time.perf_counter()
            d(audio)
            seconds = time.perf_counter() - t0
            windows = len(d._chunk_starts(len(audio)))
            seg_macs = windows * seg_window + len(audio) * sinc_sample
            emb_macs = counted["frames"] * per_frame + counted["items"] * campp_macs_per_item()
            floor = (seg_macs + emb_macs) / rate
            row = [label, f"{windows}", f"{counted['items']}", f"{counted['frames']}",
                   f"{(seg_macs + emb_macs) / 1e9:.0f}", f"{floor:.2f}", f"{seconds:.2f}",
                   f"{2 * (seg_macs + emb_macs) / seconds / 1e9:.0f}"]  # fmt: skip
            line = (f"{label}: {windows} windows, {counted['items']} embeddings of "
                    f"{counted['frames']} frames: {(seg_macs + emb_macs) / 1e9:.0f} G "
                    f"multiply-adds (segmentation {seg_macs / 1e9:.0f}, CAM++ "
                    f"{emb_macs / 1e9:.0f}); at NumPy's sgemm rate {floor:.2f} s at least "
                    f"({dur / floor:.0f}x realtime); saywho {seconds:.2f} s")  # fmt: skip
            if args.peer_python:
                peer = run_peer(args.peer_python, audio, seg, emb, d.threshold,
                                d.min_cluster_size, args.threads, None)["seconds"]  # fmt: skip
                line += (f"; pyannote.audio {peer:.2f} s, a tenth of it {peer / 10:.2f} s "
                         f"= {peer / 10 / floor:.2f} of the floor")  # fmt: skip
                row += [f"{peer:.2f}", f"{peer / 10:.2f}"]
            print(line, flush=True)
            rows.append(row)
    cols = (" recording | windows | embeddings | frames | G multiply-adds | floor s |"
            " saywho s | saywho GFLOP/s |")  # fmt: skip
    if args.peer_python:
        cols += " pyannote s | pyannote / 10 s |"
    print("\n|" + cols)
    print("|" + "---|" * cols.count("|"))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
