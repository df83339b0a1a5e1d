"""The saywho command: who said what, and when, for each file given.

Each file is transcribed, diarized and aligned (Pipeline.process), its
speaker-attributed transcript printed and, with ``-o``, written. With no
file it runs on the bundled sample; with no ``--model`` it takes Whisper
large-v3-turbo on a GPU and small on the CPU, from the Hugging Face hub on
first use (saywho.models.hub). Exit status: 0 when every file
went well, 1 when some failed (the others are still written), 2 for usage
errors.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import time
from pathlib import Path

from .._internal.native import _core
from ..api.pipeline import Pipeline
from ..api.stage_progress import LineAwareHandler, ProgressBar, run_stages
from ..audio.sample import sample_path
from ..formats.output_names import output_dir
from ..models.hub import AUTO, default_model_name
from .options import (
    add_processing_options,
    check_processing_options,
    pipeline_kwargs,
    process_kwargs,
    write_kwargs,
)
from .total_progress import BatchProgress, estimated_duration

EXAMPLES = """\
examples:
  saywho talk.m4a -o out/                       who said what, every format into out/
  saywho talk.m4a --num-speakers 2 --language en --format srt -o out/
  saywho lecture.mp3 --no-speakers --initial-prompt "Fourier, Laplace" --hotwords "eigenvalue"
  saywho interview.wav --task translate --temperature 0 --beam-size 1
  saywho talk.m4a --min_speakers 2 --max_speakers 4 --output_format all -o out/   (WhisperX's spellings)

more commands:
  saywho serve [--help]             OpenAI's /v1/audio/* API on this machine (pip install "saywho[server]")
  saywho batch IN -o OUT [--help]   many files or a folder, an index.jsonl, resume; --ray for a cluster

Every flag also takes its underscore spelling (--min_speakers, --initial_prompt,
--output_format); true/false flags take --no-FLAG, or --FLAG_NAME false.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="saywho",
        description="Who said what, and when: transcribe, diarize and align each file.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", help="audio or video files (default: the bundled sample)")
    add_processing_options(p, "write transcript files here, one folder per input")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="log memory checkpoints")
    return p


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def run_file(pipeline: Pipeline, path: str, args, label: str = "") -> float:
    """Processes one file, prints its transcript, writes its files; returns
    the audio's duration. ``label``: which of several files (``[2/5] ``)."""
    bar = (
        None
        if args.quiet
        else ProgressBar(
            label + Path(path).name,
            sys.stderr,
            stages=run_stages(not args.no_speakers, bool(args.speaker)),
        )
    )
    try:
        result = pipeline.process(path, progress=bar, **process_kwargs(args))
    finally:
        if bar is not None:
            bar.close()
    speakers = f", {len(result.speakers)} speakers" if not args.no_speakers else ""
    language = result.language or "no speech"  # None when nobody spoke (saywho.api.silence)
    print(f"{path} ({result.duration:.1f} s, {language}{speakers})")
    print(result.text.rstrip())
    if args.output_dir:
        # each input its own folder (saywho.formats.output_names): no name can lead
        # outside --output-dir, and same-named inputs never share a folder
        written = result.write(args.output_dir, per_input=True, **write_kwargs(args))
        print(f"  {path} -> {written[0].parent}: " + ", ".join(p.name for p in written))
    return result.duration


# Subcommands (``saywho NAME ...``) live in their own modules, imported only
# when named, so transcribing a file never pays for a web server or a cluster
# client. A file of the same name is given as ./NAME.
SUBCOMMANDS: dict[str, str] = {
    "serve": "saywho.service.server.cli",
    "batch": "saywho.service.batch.cli",
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    check_processing_options(args, parser)
    handler = LineAwareHandler(sys.stderr)  # never glued onto the progress line
    handler.setFormatter(logging.Formatter("%(message)s"))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    files = args.files or [str(sample_path())]
    if args.output_dir:
        try:  # an unsafe output folder is known now: refuse before any model or audio
            for path in files:
                output_dir(args.output_dir, path)
        except _core.SaywhoError as e:
            print(f"saywho: {e}", file=sys.stderr)
            return 2
    try:
        pipeline = Pipeline(**pipeline_kwargs(args))
    except _core.SaywhoError as e:
        print(f"saywho: {e}", file=sys.stderr)
        return 2
    if args.diarization:
        try:  # a gated repo or a missing token stops here, before any file
            pipeline.diarization_models()
        except _core.SaywhoError as e:
            pipeline.close()
            print(f"saywho: {e}", file=sys.stderr)
            return 2
    failed, audio, start = 0, 0.0, time.perf_counter()
    with pipeline:
        chosen = ""
        if args.model == AUTO:
            chosen = f", Whisper {default_model_name(pipeline.device)} (--model chooses another)"
        print(f"saywho {_core.__version__} on {pipeline.device_name}{chosen}")
        # why "auto" took the CPU was logged once (saywho._internal.device): a warning
        # where an NVIDIA device exists but cannot be used, else with -v only
        several = len(files) > 1 and not args.quiet
        overall = (
            BatchProgress({f: estimated_duration(f) for f in files}, sys.stderr, redraw=False)
            if several
            else None
        )
        for i, path in enumerate(files):
            duration, status = None, "ok"
            try:
                duration = run_file(
                    pipeline, path, args, f"[{i + 1}/{len(files)}] " if several else ""
                )
                audio += duration
            except _core.SaywhoError as e:
                failed += 1
                status = "error"
                print(f"saywho: {e}", file=sys.stderr)
            if overall is not None:  # the whole run: files, audio, elapsed, ETA
                overall.finished(path, duration, status)
        pipeline.checkpoint("After All Files")
    elapsed = time.perf_counter() - start
    speed = f", {audio / elapsed:.1f}x realtime" if elapsed > 0 and audio > 0 else ""
    done = len(files) - failed
    print(
        f"{_minutes(audio)} of audio in {_minutes(elapsed)}{speed} ({done} of {len(files)} files)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
