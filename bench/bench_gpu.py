"""Whisper's speed on a GPU at the sizes users run: saywho against Hugging
Face transformers (and faster-whisper where it imports), the same shapes,
the same audio, the same number of decoded tokens per window, one row per
engine. scripts/gpu_measure.sh and scripts/gpu_check.sh run it.

    python3 bench/bench_gpu.py --model large-v3-turbo-shape [--device cuda]
        [--compute-type float16 float32] [--mode sequential batched]
        [--beam-size 5] [--batch-size 8] [--tokens 100] [--windows 4]
        [--engines saywho transformers faster-whisper] [--diarize] [--json OUT.json]

``--model NAME-shape`` (large-v3, large-v3-turbo, medium, small, test) makes
random-weight checkpoints of that shape (bench/make_shape_checkpoint.py,
under --checkpoints, once); a folder is a real checkpoint (saywho reads
either format; transformers needs its safetensors, faster-whisper its
model.bin). The audio is ``--windows`` whole 30 s windows of the tests'
speech. Every engine decodes exactly ``--tokens`` tokens a window: the end
of text is suppressed and the length capped (no timestamps, no previous
text, one temperature, no thresholds), and each row reports the tokens it
did decode, so equal work is checked, not assumed. "sequential" decodes one
window after the other; "batched" ``--batch-size`` windows at once (saywho's
and faster-whisper's BatchedInferencePipeline over fixed 30 s clips). Both
use ``--beam-size``.

Each row runs in its own process (so one engine's memory and threads do not
slow the next), after loading its model and one untimed warm-up call; its
x realtime is audio seconds over the timed seconds, and its ratio is
saywho's x realtime over the row's. Every row names the card, its driver,
the engine's version and the CPU. An engine that does not import or cannot
run a compute type is a row saying why, never a missing row. With --device
cpu or cuda-emulated the peers run on the CPU: the figures then only prove
the script works (the emulator runs each GPU thread as a fiber).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from machine import cpu_model  # noqa: E402

DATA = REPO / "tests" / "data" / "shared"
WINDOW = 30  # seconds
SR = 16000
ENGINES = ("saywho", "transformers", "faster-whisper")
DEFAULT_CHECKPOINTS = REPO / ".cache" / "shape-checkpoints"


# ---------------------------------------------------------------- the work


def windows_audio(n: int):
    """``n`` whole 30 s windows of the tests' speech, the same every time."""
    from tests.long_recording import assemble

    return assemble(DATA, n * WINDOW / 60)[: n * WINDOW * SR]


def clips(n: int) -> list:
    return [{"start": float(i * WINDOW), "end": float((i + 1) * WINDOW)} for i in range(n)]


def ct2_max_new_tokens(tokens: int, prompt_len: int) -> int:
    """The max_new_tokens that makes saywho and faster-whisper decode exactly
    ``tokens``: CTranslate2's Whisper (which saywho follows) decodes at most
    min(L / 2, L - (prompt - 1)) tokens for a length limit L = prompt +
    max_new_tokens (csrc/whisper/whisper_generate.c), so L = 2 * tokens."""
    return 2 * tokens - prompt_len


def forced(tokens: int, eot: int, multilingual: bool = True) -> dict:
    """The options that make a window decode a fixed token count, the same
    for saywho and faster-whisper (prompt: sot, en, transcribe, notimestamps;
    an English-only model's: sot, notimestamps)."""
    return dict(
        language="en",
        task="transcribe",
        temperature=0.0,
        without_timestamps=True,
        suppress_tokens=[-1, eot],
        max_new_tokens=ct2_max_new_tokens(tokens, 4 if multilingual else 2),
        compression_ratio_threshold=None,
        log_prob_threshold=None,
        no_speech_threshold=None,
        condition_on_previous_text=False,
    )


def model_dirs(model: str, checkpoints: Path, formats: list) -> dict:
    """{"hf": dir, "ct2": dir} for a shape (made once) or a real folder."""
    if model.endswith("-shape"):
        from make_shape_checkpoint import make_checkpoint

        out = make_checkpoint(model, checkpoints / model.removesuffix("-shape"), formats=formats)
        return {f: str(out / f) for f in formats}
    path = Path(model)
    if not path.is_dir():
        from tests.weights import test_model_dir

        path = Path(test_model_dir(model))  # "tiny.en", "base": the test weights
    fmt = "ct2" if (path / "model.bin").is_file() else "hf"
    return {fmt: str(path)}


def run_saywho(row: dict, audio, dirs: dict) -> tuple[float, list]:
    from saywho.whisper import BatchedInferencePipeline
    from saywho.whisper.transcribe import WhisperModel

    path = dirs.get("hf") or dirs["ct2"]
    model = WhisperModel(
        path, device=row["device"], compute_type=row["compute_type"], cpu_threads=row["threads"]
    )
    return _run_faster_whisper_api(row, audio, model, BatchedInferencePipeline)


def run_faster_whisper(row: dict, audio, dirs: dict) -> tuple[float, list]:
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    if "ct2" not in dirs:
        raise RuntimeError("needs a CTranslate2 model.bin")
    device = "cuda" if row["device"] == "cuda" else "cpu"
    model = WhisperModel(
        dirs["ct2"], device=device, compute_type=row["compute_type"], cpu_threads=row["threads"]
    )
    return _run_faster_whisper_api(row, audio, model, BatchedInferencePipeline)


def _run_faster_whisper_api(row, audio, model, batched_pipeline) -> tuple[float, list]:
    """saywho and faster-whisper share the API: the same call for both."""
    options = forced(row["tokens"], row["eot"], row["multilingual"])
    options["beam_size"] = row["beam_size"]
    n = row["windows"]

    def call(samples, windows):
        if row["mode"] == "batched":
            pipeline = batched_pipeline(model)
            segments, _ = pipeline.transcribe(
                samples,
                batch_size=row["batch_size"],
                vad_filter=False,
                clip_timestamps=clips(windows),
                **options,
            )
        else:
            segments, _ = model.transcribe(samples, **options)
        return [len(s.tokens) for s in segments]

    warm = 1 if row["mode"] == "sequential" else min(n, row["batch_size"])
    call(audio[: warm * WINDOW * SR], warm)
    t0 = time.perf_counter()
    counts = call(audio, n)
    return time.perf_counter() - t0, counts


def run_transformers(row: dict, audio, dirs: dict) -> tuple[float, list]:
    import torch
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    if "hf" not in dirs:
        raise RuntimeError("needs a Hugging Face safetensors folder")
    dtypes = {"float16": torch.float16, "float32": torch.float32, "bfloat16": torch.bfloat16}
    if row["compute_type"] not in dtypes:
        raise RuntimeError(f"no {row['compute_type']} in transformers' Whisper")
    dtype = dtypes[row["compute_type"]]
    if row["threads"]:
        torch.set_num_threads(row["threads"])
    device = "cuda" if row["device"] == "cuda" else "cpu"
    try:
        model = WhisperForConditionalGeneration.from_pretrained(
            dirs["hf"], dtype=dtype, attn_implementation="sdpa"
        )
    except TypeError:  # transformers before 4.56 names it torch_dtype
        model = WhisperForConditionalGeneration.from_pretrained(
            dirs["hf"], torch_dtype=dtype, attn_implementation="sdpa"
        )
    model = model.to(device=device, dtype=dtype).eval()  # whatever the loader made of dtype
    features = WhisperFeatureExtractor.from_pretrained(dirs["hf"])
    gen = model.generation_config
    suppress = list(gen.suppress_tokens or []) + [row["eot"]]
    # the prompt generate puts first (some versions return it, some do not)
    init = [
        gen.decoder_start_token_id,
        gen.lang_to_id["<|en|>"],
        gen.task_to_id["transcribe"],
        gen.no_timestamps_token_id,
    ]
    batch = row["batch_size"] if row["mode"] == "batched" else 1
    n = row["windows"]
    pieces = [audio[i * WINDOW * SR : (i + 1) * WINDOW * SR] for i in range(n)]

    def call(windows: list) -> list:
        counts = []
        for i in range(0, len(windows), batch):
            group = windows[i : i + batch]
            mel = features(
                group, sampling_rate=SR, return_tensors="pt", device=device
            ).input_features.to(device, dtype)
            with torch.inference_mode():
                out = model.generate(
                    mel,
                    language="en",
                    task="transcribe",
                    return_timestamps=False,
                    num_beams=row["beam_size"],
                    do_sample=False,
                    max_new_tokens=row["tokens"],
                    min_new_tokens=row["tokens"],
                    suppress_tokens=suppress,
                )
            sequences = out if torch.is_tensor(out) else out.sequences
            counts += [len(decoded(seq.tolist(), init)) for seq in sequences]
        if device == "cuda":
            torch.cuda.synchronize()
        return counts

    call(pieces[:batch])
    t0 = time.perf_counter()
    counts = call(pieces)
    return time.perf_counter() - t0, counts


def decoded(sequence: list, init: list) -> list:
    """A returned sequence without the prompt at its start."""
    n = 0
    while n < min(len(init), len(sequence)) and sequence[n] == init[n]:
        n += 1
    return sequence[n:]


def vocabulary_of(folder: str) -> tuple[int, bool]:
    """(the id of <|endoftext|>, multilingual) from a checkpoint's
    tokenizer.json: the English-only vocabulary has one token fewer before
    it (50256, against 50257; its timestamps are not listed, so the size
    cannot tell)."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        added = json.load(f)["added_tokens"]
    eot = next(t["id"] for t in added if t["content"] == "<|endoftext|>")
    return eot, eot >= 50257


def engine_version(engine: str) -> str:
    """The engine's packages and versions, read without importing them."""
    from importlib.metadata import PackageNotFoundError, version

    names = {
        "saywho": ["saywho"],
        "transformers": ["transformers", "torch"],
        "faster-whisper": ["faster-whisper", "ctranslate2"],
    }[engine]
    try:
        return " ".join(f"{n} {version(n)}" for n in names)
    except PackageNotFoundError as e:
        return f"{e.args[0]} not installed"


DIARIZE_MODELS = ("segmentation-3.0 + GE2E", "default: segmentation-3.0 + CAM++")


def run_diarize(row: dict, audio) -> tuple[float, list]:
    """The Diarizer at its defaults (batch 32 on a GPU), after one untimed
    call on 12 s (cuBLAS and the pools warm); the models: the tests' GE2E
    pair, or the ones the wheel ships (saywho's default diarization)."""
    from saywho._internal.device import open_runtime
    from saywho.diarization import Diarizer
    from saywho.models.bundled import default_diarization_models
    from tests.weights import test_diarization_models

    runtime = open_runtime(row["device"])
    if row["model"] == DIARIZE_MODELS[0]:
        seg, emb = test_diarization_models()
    else:
        seg, emb = default_diarization_models()
    with Diarizer(seg, emb, runtime=runtime) as d:
        d(audio[: 12 * SR])
        t0 = time.perf_counter()
        result = d(audio)
        took = time.perf_counter() - t0
    runtime.close()
    return took, [len(result.speakers)]


def worker(row: dict) -> dict:
    audio = windows_audio(row["windows"])
    out = {"audio_seconds": audio.size / SR}
    if row["engine"] == "saywho" and row["mode"] == "diarize":
        seconds, counts = run_diarize(row, audio)
        out.update(seconds=seconds, speakers=counts[0])
        return out
    dirs = model_dirs(row["model"], Path(row["checkpoints"]), row["formats"])
    row["eot"], row["multilingual"] = vocabulary_of(next(iter(dirs.values())))
    run = {
        "saywho": run_saywho,
        "transformers": run_transformers,
        "faster-whisper": run_faster_whisper,
    }[row["engine"]]
    seconds, counts = run(row, audio, dirs)
    out.update(seconds=seconds, windows_decoded=len(counts), tokens_per_window=counts)
    return out


# ------------------------------------------------------------ the machine


def card() -> tuple[str, str]:
    """(the GPU's name, its driver) from nvidia-smi, or why there is none."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"none ({type(e).__name__})", "-"
    line = done.stdout.strip().splitlines()[:1]
    if done.returncode != 0 or not line:
        return "none (nvidia-smi found no GPU)", "-"
    name, driver = (part.strip() for part in line[0].split(",", 1))
    return name, driver


def run_row(row: dict, timeout: float) -> dict:
    """The row's worker in its own process; its result or why there is none."""
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--worker", json.dumps(row)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"did not finish in {timeout:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": why[:160]}
    return json.loads(lines[-1])


def formats_for(engines: list) -> list:
    """The shape's formats to make: the CTranslate2 copy (as large again)
    only where faster-whisper imports and will read it."""
    wants_ct2 = "faster-whisper" in engines and importlib.util.find_spec("faster_whisper")
    return ["hf"] + (["ct2"] if wants_ct2 else [])


def plan(args) -> list[dict]:
    peer_device = "cuda" if args.device == "cuda" else "cpu"
    formats = formats_for(args.engines)
    rows = []
    for compute in args.compute_type:
        for mode in args.mode:
            for engine in args.engines:
                rows.append(
                    {
                        "engine": engine,
                        "mode": mode,
                        "compute_type": compute,
                        "model": args.model,
                        "device": args.device if engine == "saywho" else peer_device,
                        "beam_size": args.beam_size,
                        "batch_size": args.batch_size if mode == "batched" else 1,
                        "tokens": args.tokens,
                        "threads": args.threads,
                        "windows": args.windows,
                        "checkpoints": str(args.checkpoints),
                        "formats": formats,
                    }
                )
    for model in DIARIZE_MODELS if args.diarize else ():
        rows.append(
            {
                "engine": "saywho",
                "mode": "diarize",
                "compute_type": "float32",
                "model": model,
                "device": args.device,
                "windows": args.windows,
            }
        )
    return rows


def finish(rows: list[dict]) -> None:
    """x realtime, and each row's ratio: saywho's x realtime over its own."""
    saywho = {}
    for r in rows:
        if "seconds" in r:
            r["x_realtime"] = r["audio_seconds"] / r["seconds"]
            if r["engine"] == "saywho":
                saywho[(r["mode"], r["compute_type"])] = r["x_realtime"]
    for r in rows:
        mine = saywho.get((r["mode"], r["compute_type"]))
        if "x_realtime" in r and mine is not None:
            r["saywho_ratio"] = mine / r["x_realtime"]


def table(rows: list[dict], machine: dict) -> str:
    """The rows as a markdown table (docs/cuda_backend.md takes it as it is)."""
    lines = [
        f"card: {machine['card']}, driver {machine['driver']}; CPU: {machine['cpu']}",
        "",
        "| model | engine | device | mode | compute | beam | batch | threads | tokens/window "
        "| x realtime | saywho ÷ engine | version |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "error" in r:
            speed, ratio, tokens = "-", r["error"], "-"
        else:
            speed = f"{r['x_realtime']:.1f}"
            ratio = f"{r['saywho_ratio']:.2f}" if "saywho_ratio" in r else "-"
            got = sorted(set(r.get("tokens_per_window", [])))
            tokens = "/".join(map(str, got)) if got else "-"
        lines.append(
            f"| {r['model']} | {r['engine']} | {r['device']} | {r['mode']} | {r['compute_type']} "
            f"| {r.get('beam_size', '-')} | {r.get('batch_size', '-')} | {r.get('threads') or '-'} "
            f"| {tokens} | {speed} "
            f"| {ratio} | {r.get('version', '-')} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="large-v3-turbo-shape")
    ap.add_argument("--device", default="cuda", help="cuda, cuda-emulated or cpu (saywho's)")
    ap.add_argument("--compute-type", nargs="+", default=["float16"])
    ap.add_argument("--mode", nargs="+", choices=("sequential", "batched"), default=["sequential", "batched"])  # fmt: skip
    ap.add_argument("--beam-size", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=100, help="decoded tokens per window (<= 224)")
    ap.add_argument("--windows", type=int, default=8, help="30 s windows of speech")
    ap.add_argument("--engines", nargs="*", choices=ENGINES, default=list(ENGINES), help="none: only the --diarize row")  # fmt: skip
    ap.add_argument("--threads", type=int, default=0, help="host threads per engine (0: its own)")
    ap.add_argument(
        "--diarize",
        action="store_true",
        help="and saywho's diarization rows (GE2E, the default CAM++)",
    )
    ap.add_argument("--checkpoints", type=Path, default=DEFAULT_CHECKPOINTS)
    ap.add_argument("--timeout", type=float, default=300, help="seconds a row may take")
    ap.add_argument("--json", help="write the machine and the rows here ('-': stdout)")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if not 1 <= args.tokens <= 224:
        ap.error("--tokens must be 1..224 (Whisper's 448-token context, CTranslate2's half)")
    name, driver = card()
    machine = {"card": name, "driver": driver, "cpu": cpu_model(), "device": args.device}
    if args.model.endswith("-shape") and args.engines:  # made once, before any row's clock
        from make_shape_checkpoint import make_checkpoint

        formats = formats_for(args.engines)
        t0 = time.perf_counter()
        make_checkpoint(args.model, args.checkpoints / args.model.removesuffix("-shape"), formats=formats)  # fmt: skip
        machine["checkpoint_seconds"] = round(time.perf_counter() - t0, 1)
    rows = []
    for row in plan(args):
        result = run_row(row, args.timeout)
        rows.append({**row, "version": engine_version(row["engine"]), **result})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        finish(rows)
        if args.json and args.json != "-":  # after every row: a stage cut short keeps its rows
            write_json(Path(args.json), machine, rows)
    print(table(rows, machine), flush=True)
    if args.json == "-":
        print(json.dumps({"machine": machine, "rows": rows}, indent=1))


def write_json(path: Path, machine: dict, rows: list) -> None:
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1) + "\n", "utf-8")
    os.replace(part, path)


if __name__ == "__main__":
    main()
