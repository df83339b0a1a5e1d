"""The saywho command.

It decodes each file, describes it, and transcribes it with Whisper when a
model is given (``--model DIR``) or the test weights are installed (the
README's set-up fetches them). Speakers come with the diarization issue.
With no file it runs on the bundled sample.
"""

from __future__ import annotations

import argparse
import logging
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from . import _core, writers
from .audio import SAMPLE_RATE
from .features import fbank, log_mel_spectrogram
from .pipeline import Pipeline
from .sample import sample_path


def describe(pipeline: Pipeline, path: str) -> str:
    samples = pipeline.load_audio(path)
    duration = samples.size / SAMPLE_RATE
    peak = float(np.max(np.abs(samples))) if samples.size else 0.0
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if samples.size else 0.0
    rms_db = 20 * np.log10(rms) if rms > 0 else float("-inf")
    mel = log_mel_spectrogram(samples, n_mels=80)
    feats = fbank(samples)
    return (
        f"{path}\n"
        f"  audio     {duration:.2f} s, {samples.size} samples at {SAMPLE_RATE} Hz mono, "
        f"peak {peak:.3f}, RMS {rms_db:.1f} dBFS\n"
        f"  log-mel   {mel.shape[0]} bins x {mel.shape[1]} frames (Whisper), "
        f"range {mel.min():.3f} .. {mel.max():.3f}\n"
        f"  fbank     {feats.shape[0]} frames x {feats.shape[1]} bins (speaker embeddings)"
    )


def default_model() -> str | None:
    """The test weights' tiny.en when scripts/fetch_test_weights.sh has run."""
    from .models.test_weights import test_model_dir

    try:
        return str(test_model_dir("tiny.en"))
    except _core.ModelError:
        return None


def transcript(pipeline: Pipeline, path: str, args) -> str:
    segments, info = pipeline.transcribe(
        path,
        beam_size=args.beam_size,
        language=args.language,
        word_timestamps=args.word_timestamps,
    )
    lines = [f"  language  {info.language} ({info.language_probability:.2f})"]
    for s in segments:
        lines.append(f"  [{s.start:7.2f} -> {s.end:7.2f}] {s.text.strip()}")
    if args.output_dir:
        metadata = {
            "source": str(path),
            "duration": info.duration,
            "language": info.language,
            "language_probability": info.language_probability,
            "model": args.model or default_model(),
            "saywho_version": _core.__version__,
            "options": {
                "beam_size": args.beam_size,
                "language": args.language,
                "word_timestamps": args.word_timestamps,
            },
            "processed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        out = Path(args.output_dir) / Path(path).stem
        written = writers.write_all(out, segments, metadata, formats=args.format)
        lines.append("  wrote     " + ", ".join(str(p) for p in written))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saywho", description="Who said what, and when.")
    p.add_argument("files", nargs="*", help="audio or video files (default: the bundled sample)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: one per CPU)")
    p.add_argument(
        "--model", help="Whisper model directory (default: the test tiny.en, if fetched)"
    )
    p.add_argument("--beam-size", type=int, default=5, help="beam size (1: greedy)")
    p.add_argument("--language", help="language code (default: detect)")
    p.add_argument("--word-timestamps", action="store_true", help="time every word")
    p.add_argument("-o", "--output-dir", help="write transcript files here, one folder per input")
    p.add_argument(
        "--format",
        action="append",
        choices=writers.FORMATS,
        help="transcript format to write (repeatable; default: every one the run allows)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log memory checkpoints")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s"
    )
    files = args.files or [str(sample_path())]
    failed = 0
    model = args.model or default_model()
    try:
        pipeline = Pipeline(model=model, device=args.device, threads=args.threads)
    except _core.SaywhoError as e:
        print(f"saywho: {e}", file=sys.stderr)
        return 2
    with pipeline:
        print(f"saywho {_core.__version__} on {pipeline.device_name}")
        if pipeline.fallback_reason:
            print(f"  (CPU because: {pipeline.fallback_reason})")
        for path in files:
            try:
                print(describe(pipeline, path))
                if model is not None:
                    print(transcript(pipeline, path, args))
            except _core.SaywhoError as e:
                failed += 1
                print(f"saywho: {e}", file=sys.stderr)
        pipeline.checkpoint("After All Files")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
