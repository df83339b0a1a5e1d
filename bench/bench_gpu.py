"""Speed on a GPU: saywho's CUDA backend against faster-whisper on the same
machine, same weights, same audio; x realtime for transcription (beam 5 and
batched) and for diarization. scripts/gpu_check.sh runs it.

    python3 bench/bench_gpu.py [--device cuda] [--model base] [--minutes 2]
        [--compute float16 int8_float16]

Each row runs in its own process. A compute type saywho (or the peer) does not
build is a row that says so, not a silent float32. With --device
cuda-emulated (the dry run) the peer runs on the CPU, and the figures only
prove that the script works: the emulator runs each GPU thread as a fiber.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "shared"


def audio_for(minutes: float):
    sys.path.insert(0, str(REPO))
    import saywho
    from tests.long_recording import assemble

    if minutes <= 11 / 60:  # the dry run: jfk alone
        return saywho.load_audio(DATA / "jfk.wav")
    return assemble(DATA, minutes)


def worker(row: dict) -> dict:
    audio = audio_for(row["minutes"])
    seconds_audio = audio.size / 16000
    if row["what"] == "diarize":
        from saywho.device import open_runtime
        from saywho.diarization import Diarizer
        from tests.weights import test_diarization_models

        runtime = open_runtime(row["device"])
        seg, emb = test_diarization_models()
        with Diarizer(seg, emb, runtime=runtime) as d:
            t0 = time.perf_counter()
            result = d(audio)
            took = time.perf_counter() - t0
        runtime.close()
        return {"seconds": took, "audio": seconds_audio, "out": f"{len(result.speakers)} speakers"}
    from tests.weights import test_model_dir

    path = str(test_model_dir(row["model"]))
    if row["engine"] == "saywho":
        from saywho.whisper import BatchedInferencePipeline
        from saywho.whisper.transcribe import WhisperModel

        model = WhisperModel(path, device=row["device"], compute_type=row["compute"])
    else:
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        model = WhisperModel(path, device=row["peer_device"], compute_type=row["compute"])
    t0 = time.perf_counter()
    if row["what"] == "batched":
        segments, _ = BatchedInferencePipeline(model).transcribe(audio, batch_size=8)
    else:
        segments, _ = model.transcribe(audio, beam_size=5, temperature=0.0)
    text = " ".join(s.text.strip() for s in segments)
    took = time.perf_counter() - t0
    return {"seconds": took, "audio": seconds_audio, "out": text[:40]}


def run(row: dict) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(row)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": why[:90]}
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--model", default="base")
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--compute", nargs="+", default=["float16", "int8_float16"])
    ap.add_argument("--quick", action="store_true", help="beam 5 rows only (the dry run)")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    peer_device = "cpu" if args.device == "cuda-emulated" else "cuda"
    rows = []
    for compute in args.compute:
        for what in ("beam5",) if args.quick else ("beam5", "batched"):
            for engine in ("saywho", "faster-whisper"):
                rows.append(
                    {
                        "engine": engine,
                        "what": what,
                        "compute": compute,
                        "model": args.model,
                        "device": args.device,
                        "peer_device": peer_device,
                        "minutes": args.minutes,
                    }
                )
    rows.append(
        {
            "engine": "saywho",
            "what": "diarize",
            "compute": "float32",
            "device": args.device,
            "minutes": args.minutes,
        }
    )
    print(
        f"model {args.model}, {args.minutes:g} min of speech, saywho on {args.device}, "
        f"faster-whisper on {peer_device}"
    )
    print(f"{'engine':15} {'task':8} {'compute':13} {'seconds':>8} {'x realtime':>10}  ratio")
    last = {}
    for row in rows:
        r = run(row)
        key = (row["what"], row["compute"])
        label = f"{row['engine']:15} {row['what']:8} {row['compute']:13}"
        if "error" in r:
            print(f"{label} {'-':>8} {'-':>10}  {r['error']}")
            continue
        ratio = ""
        if row["engine"] == "faster-whisper" and key in last:
            ratio = f"saywho {r['seconds'] / last[key]:.2f}x as fast"
        elif row["engine"] == "saywho":
            last[key] = r["seconds"]
        print(f"{label} {r['seconds']:8.2f} {r['audio'] / r['seconds']:10.1f}  {ratio}")


if __name__ == "__main__":
    main()
