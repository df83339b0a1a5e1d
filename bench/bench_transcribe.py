"""Transcription speed: saywho against faster-whisper, same weights, same threads.

Each engine runs in its own process (so peak RSS is its own) on the same
recordings (bench/recordings.py: "speech", mostly talk, and "meeting", longer,
five voices, long pauses); the table gives, per recording, seconds of
transcription (model loaded before the clock starts) and seconds with the
load included, x realtime, peak RSS, saywho's speed ratio over faster-whisper
(> 1: saywho faster) both ways, and the WER between the two texts (0: the
same work). Temperature fallback is off (temperature=0) so both decode the
same windows. The first line says which CPU and which kernels ran
(SAYWHO_CPU_DISPATCH=avx2 or baseline forces a lower dispatch; avx512 keeps
AMX tiles off), and each row's "path" column which kernels saywho's large
products took: AMX (Intel's tiles), VNNI, AVX2 or SSE2 for int8; AMX or
f32(bf16) (float32 products of bfloat16-rounded operands) for bfloat16.
bfloat16 rows (--computes float32 int8 bfloat16; by default where the CPU
has AMX-BF16) are measured against faster-whisper's int8, the issue's bar.

    python3 bench/bench_transcribe.py [--model tiny.en] [--minutes 5] [--threads 2]
        [--recordings speech meeting] [--computes float32 int8 bfloat16] [--whispercpp [PATH]]

With --whispercpp, whisper.cpp's whisper-cli (built by bench/build_whispercpp.sh,
or the binary given) joins every row on the same weights, converted to its
ggml file by bench/whispercpp_model.py (float16 matrices, as its own
converter writes them; the int8 rows take that file's q8_0 quantization by
whisper-quantize, built beside whisper-cli), same audio as a 16 kHz WAV,
same threads, no fallback; its time is the whole process (load included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))


def worker(engine, model, recording_name, minutes, beam, threads, compute) -> dict:
    from checkout_weights import whisper_dir
    from machine import product_path
    from recordings import recording

    audio = recording(recording_name, minutes)
    path = str(whisper_dir(model))
    options = {"beam_size": beam, "temperature": 0.0}
    t0 = time.perf_counter()
    if engine == "saywho":
        from saywho.whisper.transcribe import WhisperModel

        m = WhisperModel(path, device="cpu", cpu_threads=threads, compute_type=compute)
    else:
        from faster_whisper import WhisperModel

        m = WhisperModel(path, device="cpu", compute_type=compute, cpu_threads=threads)
    t1 = time.perf_counter()
    segments, _ = m.transcribe(audio, **options)
    text = " ".join(s.text.strip() for s in segments)
    seconds = time.perf_counter() - t1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    path = product_path(compute) if engine == "saywho" else ""
    return {"seconds": seconds, "load": t1 - t0, "audio": audio.size / 16000, "rss": rss,
            "text": text, "path": path}  # fmt: skip


def run(engine, args, recording_name, beam, compute) -> dict:
    cmd = [sys.executable, __file__, "--worker", engine, "--model", args.model]
    cmd += ["--minutes", str(args.minutes), "--beam", str(beam), "--threads", str(args.threads)]
    cmd += ["--recording", recording_name]
    cmd += ["--compute", compute]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


WHISPERCPP = REPO / ".cache" / "whispercpp"


def whispercpp_binary(given: str) -> Path:
    if given != "build":
        path = Path(given)
    else:
        out = subprocess.run(
            ["bash", str(REPO / "bench" / "build_whispercpp.sh")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        path = REPO / out.stdout.strip().splitlines()[-1]
    if not path.is_file():
        raise SystemExit(f"{path}: no whisper-cli there; bench/build_whispercpp.sh builds it")
    return path


def whispercpp_model(binary: Path, model_name: str, compute: str) -> Path:
    """The ggml file of the same weights: float16 matrices for the float32
    rows (whisper.cpp computes in float32 from them, as saywho does), its
    q8_0 quantization (whisper-quantize, built beside whisper-cli) for the
    int8 rows."""
    from checkout_weights import whisper_dir
    from whispercpp_model import write_ggml

    f16 = WHISPERCPP / f"ggml-{model_name}.bin"
    if not f16.exists():
        write_ggml(whisper_dir(model_name), f16)
    if compute == "float32":
        return f16
    q8 = WHISPERCPP / f"ggml-{model_name}-q8_0.bin"
    if not q8.exists():
        quantize = binary.parent / "whisper-quantize"
        if not quantize.exists():
            raise SystemExit(f"{quantize}: missing; bench/build_whispercpp.sh builds it")
        partial = q8.with_suffix(".partial")
        subprocess.run([str(quantize), str(f16), str(partial), "q8_0"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        partial.rename(q8)
    return q8


def run_whispercpp(binary: Path, args, recording_name: str, beam: int, compute: str) -> dict:
    """whisper-cli on the bench audio: seconds (the whole process, model load
    included), peak RSS of that process, words."""
    import numpy as np
    from recordings import recording

    model = whispercpp_model(binary, args.model, compute)
    audio = recording(recording_name, args.minutes)
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "bench.wav"
        _write_wav(wav, (np.clip(audio, -1, 1) * 32767).astype("<i2"))
        cmd = [str(binary), "-m", str(model), "-f", str(wav), "-t", str(args.threads)]
        # no -nt: in whisper.cpp 1.8 it also decodes without timestamp tokens,
        # cheaper work than the timestamped decoding the other engines do
        cmd += ["-bs", str(beam), "-bo", str(max(beam, 1)), "-nf", "-np"]
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        text = proc.stdout.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"whisper-cli failed ({status}): {' '.join(cmd)}")
    return {"seconds": seconds, "audio": audio.size / 16000, "rss": usage.ru_maxrss * 1024,
            "words": len(text.split())}  # fmt: skip


def _write_wav(path: Path, pcm) -> None:
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny.en")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--recordings", nargs="+", default=["speech", "meeting"])
    ap.add_argument("--worker")
    ap.add_argument("--recording", default="speech")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--compute", default="float32")
    ap.add_argument(
        "--computes",
        nargs="+",
        help="saywho's compute types, rows in this order (default float32 int8, and bfloat16 "
        "where the CPU has AMX-BF16); a bfloat16 row's peer runs int8",
    )
    ap.add_argument("--only", help="rows, e.g. 'beam5-int8' or 'beam5-float32,greedy-int8'")
    ap.add_argument(
        "--whispercpp",
        nargs="?",
        const="build",
        help="add whisper.cpp (float32 rows): a whisper-cli path, or none to build it",
    )
    args = ap.parse_args()
    from machine import describe, force_peers_to_dispatch

    force_peers_to_dispatch()  # a lowered dispatch lowers the peer's too

    print(describe())  # the CPU and kernels, so figures are never compared blind
    if args.worker:
        r = worker(args.worker, args.model, args.recording, args.minutes, args.beam, args.threads,
                   args.compute)  # fmt: skip
        print(json.dumps(r))
        return

    from recordings import describe as describe_recording
    from recordings import recording

    from saywho import _core
    from saywho.eval.wer import word_error_rate

    computes = args.computes or ["float32", "int8"]
    if not args.computes and "AMX-BF16" in _core.cpu_dispatch()["amx"]:
        computes.append("bfloat16")
    cpp = whispercpp_binary(args.whispercpp) if args.whispercpp else None
    print(f"model {args.model}, {args.threads} threads, CPU, temperature 0")
    for name in args.recordings:
        print(f"\n{describe_recording(name, recording(name, args.minutes))}")
        print(
            f"{'search':8} {'compute':8} {'saywho s':>9} {'+load':>6} {'x RT':>6} {'RSS MB':>7} "
            f"{'f-w s':>7} {'+load':>6} {'x RT':>6} {'RSS MB':>7} {'ratio':>6} {'+load':>6} "
            f"{'WER':>6} {'path':>9}"
            + (f" {'w.cpp s':>8} {'x RT':>6} {'RSS MB':>7} {'ratio':>6}" if cpp else "")
        )
        for beam in (1, 5):
            for compute in computes:
                row = f"{'greedy' if beam == 1 else f'beam{beam}'}-{compute}"
                if args.only and row not in args.only.split(","):
                    continue
                # faster-whisper's int8 is the bar for saywho's bfloat16 (issue 30)
                peer = run("faster-whisper", args, name, beam,
                           "int8" if compute == "bfloat16" else compute)  # fmt: skip
                label = "greedy" if beam == 1 else f"beam {beam}"
                ours = run("saywho", args, name, beam, compute)
                line = (
                    f"{label:8} {compute:8} {ours['seconds']:9.1f} "
                    f"{ours['seconds'] + ours['load']:6.1f} {ours['audio'] / ours['seconds']:6.1f} "
                    f"{ours['rss'] / 2**20:7.0f} {peer['seconds']:7.1f} "
                    f"{peer['seconds'] + peer['load']:6.1f} {peer['audio'] / peer['seconds']:6.1f} "
                    f"{peer['rss'] / 2**20:7.0f} {peer['seconds'] / ours['seconds']:6.2f} "
                    f"{(peer['seconds'] + peer['load']) / (ours['seconds'] + ours['load']):6.2f} "
                    f"{word_error_rate(peer['text'], ours['text']):6.1%} {ours['path']:>9}"
                )
                if cpp:
                    c = run_whispercpp(cpp, args, name, beam, compute)
                    line += (
                        f" {c['seconds']:8.1f} {c['audio'] / c['seconds']:6.1f} "
                        f"{c['rss'] / 2**20:7.0f} "
                        f"{c['seconds'] / (ours['seconds'] + ours['load']):6.2f}"
                    )
                print(line, flush=True)


if __name__ == "__main__":
    main()
