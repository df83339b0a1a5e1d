"""The GPU step budget: what the CUDA backend asks of the device per decoder
step, per encoder window and per diarization chunk and batch of chunks
(issues 37, 38), read from the backend's counters (Runtime.counters) over
real work: the tests' jfk speech transcribed by tiny.en (its one 30 s window
encoded twice, as a model's first window and as a later one, then decoded
with beam 5 as the seek loop does it) and diarized with the test
diarization models (segmentation-3.0 and GE2E: the diarization rows) and
with the default ones the wheel ships (segmentation-3.0 and CAM++: the
campp rows).

    python bench/gpu_step_budget.py [--device cuda-emulated] [--beam 5]
        [--compute-type float16] [--encoder-types float16,int8_float16] [--json]

The encoder window is measured too for each of --encoder-types (rows
encoder_window_<type> and encoder_first_window_<type>; by default float16
and int8_float16, whose products take their scratch from the backend's
workspace inside the window's graph: whisper_encoder_graph.c). A type equal
to --compute-type is left out: its window is the encoder_window row.

The counters are the backend's own, the same code on a GPU and on the
emulator, so the figures are the same on both: no GPU is needed to read
them (docs/cuda_backend.md, "The step budget"). Launches count kernels,
cuBLAS calls and device-to-device copies; host_syncs the times the host
waited for the device (every download and upload waits).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JFK = REPO / "tests" / "data" / "shared" / "jfk.wav"
FIELDS = ("launches", "graph_launches", "host_syncs", "bytes_down", "bytes_up")


def per(counted: dict, n: int) -> dict:
    """counted averaged over n (steps, windows, chunks), n kept beside them."""
    return {**{k: round(counted[k] / n, 2) for k in FIELDS}, "count": n}


def whisper_budget(
    runtime, model_name: str, beam: int, compute_type: str = "float32"
) -> tuple[dict, dict, dict, list[int]]:
    """Per decoder step, per later encoder window and for the first window
    (with a backend that has graphs the first window of a model captures the
    encoder's graph, a later one replays it: whisper_encoder_graph.c), and
    the tokens."""
    import saywho
    from saywho.whisper.generate import GenerateOptions, generate_windows
    from saywho.whisper.options import TranscribeOptions
    from saywho.whisper.segments import N_FRAMES, pad_window
    from saywho.whisper.transcribe import WhisperModel
    from tests.weights import test_model_dir

    model_dir = str(test_model_dir(model_name))
    with WhisperModel(model_dir, runtime=runtime, compute_type=compute_type) as model:
        features = model.log_mel(saywho.load_audio(JFK))
        window = pad_window(features[:, :N_FRAMES])
        runtime.counters(reset=True)
        model.encode(window).close()
        first = runtime.counters(reset=True)
        encoded = model.encode(window)
        encoder = runtime.counters(reset=True)
        options = model.decoding_options(TranscribeOptions(beam_size=beam))
        prompt = model.prompt_tokens([], "en", "transcribe", False, None)
        result = generate_windows(
            model,
            encoded,
            [prompt],
            model.special,
            GenerateOptions.from_options(options, beam_size=beam, patience=1.0),
            suppress_ids=model.config.get("suppress_ids", ()),
            suppress_ids_begin=model.config.get("suppress_ids_begin", ()),
        )[0]
        decoder = runtime.counters(reset=True)
    return per(decoder, result.steps), per(encoder, 1), per(first, 1), result.sequences_ids[0]


def encoder_budget(runtime, model_name: str, compute_type: str) -> tuple[dict, dict]:
    """Per later encoder window and for the first window of a model of
    ``compute_type``: jfk's window encoded twice, no decoding."""
    import saywho
    from saywho.whisper.segments import N_FRAMES, pad_window
    from saywho.whisper.transcribe import WhisperModel
    from tests.weights import test_model_dir

    model_dir = str(test_model_dir(model_name))
    with WhisperModel(model_dir, runtime=runtime, compute_type=compute_type) as model:
        window = pad_window(model.log_mel(saywho.load_audio(JFK))[:, :N_FRAMES])
        runtime.counters(reset=True)
        model.encode(window).close()
        first = runtime.counters(reset=True)
        model.encode(window).close()
        later = runtime.counters(reset=True)
    return per(later, 1), per(first, 1)


def diarization_budget(runtime, models: str) -> tuple[dict, dict, dict]:
    """Per 10 s chunk and per batch of chunks (the Diarizer's default batch:
    32 on a GPU, device_batch.py) on jfk: ``models`` "ge2e", the tests'
    segmentation-3.0 and GE2E, or "default", the ones the wheel ships
    (segmentation-3.0 and CAM++). The figures are a second diarization's
    on the same Diarizer (what every batch of a long recording costs); the
    third dict is the first one's per chunk, with what a model makes once
    (CAM++'s chunk tables)."""
    import saywho
    from saywho.diarization import Diarizer
    from saywho.models.bundled import default_diarization_models
    from tests.weights import test_diarization_models

    audio = saywho.load_audio(JFK)
    seg, emb = test_diarization_models() if models == "ge2e" else default_diarization_models()
    with Diarizer(seg, emb, runtime=runtime) as d:
        chunks = len(d._chunk_starts(audio.size))
        batches = -(-chunks // d.batch_size)
        runtime.counters(reset=True)
        d(audio)
        first = runtime.counters(reset=True)
        d(audio)
        counted = runtime.counters(reset=True)
    return per(counted, chunks), per(counted, batches), per(first, chunks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda-emulated", help="cuda or cuda-emulated")
    ap.add_argument("--model", default="tiny.en", help="a test model: tiny.en or base")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument(
        "--compute-type",
        default="float32",
        help="Whisper's compute type: float32, float16, bfloat16, int8 or int8_float16",
    )
    ap.add_argument(
        "--encoder-types",
        default="float16,int8_float16",
        help="compute types whose encoder window is measured too, comma-separated ('' for none)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object, nothing else")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from bench.machine import cpu_model
    from saywho._internal.device import open_runtime

    runtime = open_runtime(args.device)
    if runtime.counters() is None:
        raise SystemExit(f"--device {args.device} opened {runtime.device}: no device counters")
    device_name = runtime.device_name
    try:
        decoder, encoder, first_window, tokens = whisper_budget(
            runtime, args.model, args.beam, args.compute_type
        )
        encoders = {
            t: encoder_budget(runtime, args.model, t)
            for t in args.encoder_types.split(",")
            if t and t != args.compute_type
        }
        diarization, diarization_batch, _ = diarization_budget(runtime, "ge2e")
        default_chunk, default_batch, default_first = diarization_budget(runtime, "default")
    finally:
        runtime.close()
    figures = {
        "decoder_step": decoder,
        "encoder_window": encoder,
        "encoder_first_window": first_window,
        **{f"encoder_window_{t}": later for t, (later, _) in encoders.items()},
        **{f"encoder_first_window_{t}": first for t, (_, first) in encoders.items()},
        "diarization_chunk": diarization,
        "diarization_batch": diarization_batch,
        "campp_chunk": default_chunk,
        "campp_batch": default_batch,
        "campp_first_chunk": default_first,
    }
    if args.json:
        print(json.dumps(figures))
        return 0
    print(f"device {args.device} ({device_name}); host CPU: {cpu_model()}")
    print(
        f"Whisper {args.model} ({args.compute_type}), beam {args.beam}, jfk: {len(tokens)} tokens"
    )
    width = max(len(name) for name in figures) + 2
    print(f"{'per':<{width}}" + "".join(f"{k:>15}" for k in FIELDS) + f"{'count':>8}")
    for name, row in figures.items():
        print(f"{name:<{width}}" + "".join(f"{row[k]:>15}" for k in FIELDS) + f"{row['count']:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
