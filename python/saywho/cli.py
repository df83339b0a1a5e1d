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

from . import _core
from .models.hub import AUTO, default_model_name
from .pipeline import Pipeline
from .progress import ProgressBar
from .sample import sample_path
from .whisper.transcribe import COMPUTE_TYPES
from .writers import FORMATS


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def _known_speaker(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=FILE")
    return name.strip(), path


def known_speakers(pairs) -> dict[str, list[str]] | None:
    """--speaker's NAME=FILE pairs as process's known_speakers."""
    if not pairs:
        return None
    known: dict[str, list[str]] = {}
    for name, path in pairs:
        known.setdefault(name, []).append(path)
    return known


def _vad_parameter(text: str) -> tuple[str, float]:
    """NAME=VALUE, a field of saywho.vad.VadOptions and a number."""
    import dataclasses

    from .vad import VadOptions

    name, sep, value = text.partition("=")
    names = [f.name for f in dataclasses.fields(VadOptions)]
    if not sep or name not in names:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with NAME one of {names}")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None
    return name, int(number) if number.is_integer() and name.endswith("_ms") else number


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="saywho", description="Who said what, and when.")
    p.add_argument("files", nargs="*", help="audio or video files (default: the bundled sample)")
    p.add_argument(
        "--model",
        default=AUTO,
        help="Whisper model: a name (tiny.en, small, large-v3-turbo, ...), a Hugging Face repo id "
        "or a folder (default: auto, large-v3-turbo on a GPU and small on the CPU, downloaded "
        'on first use: pip install "saywho[hub]")',
    )
    p.add_argument("--language", help="language code (default: detect)")
    speakers = p.add_mutually_exclusive_group()
    speakers.add_argument("--num-speakers", type=_positive, help="the number of speakers, if known")
    speakers.add_argument("--no-speakers", action="store_true", help="transcribe only")
    p.add_argument("--min-speakers", type=_positive, help="at least this many speakers")
    p.add_argument("--max-speakers", type=_positive, help="at most this many speakers")
    p.add_argument(
        "--diarization",
        metavar="NAME",
        help="pyannote's pipeline by name: pyannote/speaker-diarization-3.1 or "
        "pyannote/speaker-diarization-community-1 (or a folder holding its config.yaml); "
        "default: saywho's own models",
    )
    p.add_argument(
        "--hf-token",
        metavar="TOKEN",
        help="Hugging Face token for --diarization's gated repos (default: HF_TOKEN, or the "
        "token huggingface_hub stored at login)",
    )
    p.add_argument(
        "--embedding-step",
        type=float,
        metavar="SECONDS",
        help="embed each speaker only in chunks this far apart, the chunks between reusing "
        "those embeddings (a multiple of the 1 s chunk step; 2 is about twice as fast, an "
        "approximation); default: every chunk, as pyannote",
    )
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: one per CPU)")
    p.add_argument(
        "--compute-type",
        default="default",
        choices=COMPUTE_TYPES,
        help="Whisper's linear layers: float32 (default), int8 (auto picks int8) or bfloat16 "
        "(AMX tiles on Intel Xeons that have them); float16 needs a GPU",
    )
    p.add_argument(
        "--batch-size",
        type=_positive,
        default=None,
        help="transcribe N speech chunks of up to 30 s at once (faster-whisper's batched mode; "
        "turns --vad on); default: one 30 s window after the other",
    )
    p.add_argument(
        "--vad",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="transcribe only the speech Silero VAD finds (faster-whisper's vad_filter; default off)",
    )
    p.add_argument(
        "--vad-parameter",
        type=_vad_parameter,
        action="append",
        metavar="NAME=VALUE",
        help="a Silero VAD setting (faster-whisper's vad_parameters: threshold, neg_threshold, "
        "min_speech_duration_ms, max_speech_duration_s, min_silence_duration_ms, "
        "speech_pad_ms); repeatable; turns --vad on",
    )
    p.add_argument("--beam-size", type=_positive, default=5, help="beam size (1: greedy)")
    p.add_argument(
        "--word-timestamps",
        action="store_true",
        help="time every word (always on when speakers are found: alignment needs them)",
    )
    p.add_argument("-o", "--output-dir", help="write transcript files here, one folder per input")
    p.add_argument(
        "--format",
        action="append",
        choices=FORMATS,
        help="transcript format to write (repeatable; default: every one the run allows)",
    )
    p.add_argument(
        "--speaker",
        action="append",
        type=_known_speaker,
        metavar="NAME=FILE",
        help="a known voice: the found speaker who sounds like FILE is called NAME "
        "(repeatable; a NAME given twice averages its files)",
    )
    p.add_argument(
        "--fill-nearest",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a word between speaker turns takes the nearest speaker (default; "
        "--no-fill-nearest leaves it UNKNOWN)",
    )
    p.add_argument(
        "--max_line_width",
        "--max-line-width",
        type=_positive,
        metavar="N",
        help="subtitles (srt, vtt): at most N characters a line",
    )
    p.add_argument(
        "--max_line_count",
        "--max-line-count",
        type=_positive,
        metavar="N",
        help="subtitles: at most N lines a cue (needs --max_line_width)",
    )
    p.add_argument(
        "--highlight_words",
        "--highlight-words",
        action="store_true",
        help="subtitles: underline each word while it is spoken",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.add_argument("-v", "--verbose", action="store_true", help="log memory checkpoints")
    return p


def _check(args, parser: argparse.ArgumentParser) -> None:
    if args.no_speakers and (args.min_speakers or args.max_speakers):
        parser.error("--min-speakers and --max-speakers need speakers (drop --no-speakers)")
    if args.num_speakers and (args.min_speakers or args.max_speakers):
        parser.error("give --num-speakers or --min-speakers/--max-speakers, not both")
    if args.min_speakers and args.max_speakers and args.min_speakers > args.max_speakers:
        parser.error("--min-speakers is more than --max-speakers")
    if args.threads < 0:
        parser.error("--threads must be 0 or more")
    if args.diarization and args.no_speakers:
        parser.error("--diarization needs speakers (drop --no-speakers)")
    if args.speaker and args.no_speakers:
        parser.error("--speaker needs speakers (drop --no-speakers)")
    if args.max_line_count and not args.max_line_width:
        parser.error("--max_line_count needs --max_line_width")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def run_file(pipeline: Pipeline, path: str, args) -> float:
    """Processes one file, prints its transcript, writes its files; returns
    the audio's duration."""
    bar = None if args.quiet else ProgressBar(Path(path).name, sys.stderr)
    try:
        result = pipeline.process(
            path,
            diarize=not args.no_speakers,
            num_speakers=args.num_speakers,
            min_speakers=args.min_speakers,
            max_speakers=args.max_speakers,
            beam_size=args.beam_size,
            language=args.language,
            word_timestamps=args.word_timestamps or not args.no_speakers,
            vad=args.vad or args.batch_size is not None or bool(args.vad_parameter),
            vad_options=dict(args.vad_parameter) if args.vad_parameter else None,
            progress=bar,
            known_speakers=known_speakers(args.speaker),
            fill_nearest=args.fill_nearest,
            **({"batch_size": args.batch_size} if args.batch_size else {}),
        )
    finally:
        if bar is not None:
            bar.close()
    speakers = f", {len(result.speakers)} speakers" if not args.no_speakers else ""
    language = result.language or "no speech"  # None when nobody spoke (saywho.silence)
    print(f"{path} ({result.duration:.1f} s, {language}{speakers})")
    print(result.text.rstrip())
    if args.output_dir:
        # each input its own folder (saywho.output_names): no name can lead
        # outside --output-dir, and same-named inputs never share a folder
        written = result.write(
            args.output_dir,
            formats=args.format,
            per_input=True,
            max_line_width=args.max_line_width,
            max_line_count=args.max_line_count,
            highlight_words=args.highlight_words,
        )
        print(f"  {path} -> {written[0].parent}: " + ", ".join(p.name for p in written))
    return result.duration


# Subcommands (``saywho NAME ...``) live in their own modules, imported only
# when named, so transcribing a file never pays for a web server or a cluster
# client. A file of the same name is given as ./NAME.
SUBCOMMANDS: dict[str, str] = {"serve": "saywho.server.cli"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    _check(args, parser)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s"
    )
    files = args.files or [str(sample_path())]
    try:
        pipeline = Pipeline(
            model=args.model,
            device=args.device,
            threads=args.threads,
            compute_type=args.compute_type,
            diarization=args.diarization,
            token=args.hf_token,
            embedding_step=args.embedding_step,
        )
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
        if pipeline.fallback_reason:
            print(f"  (CPU because: {pipeline.fallback_reason})")
        for path in files:
            try:
                audio += run_file(pipeline, path, args)
            except _core.SaywhoError as e:
                failed += 1
                print(f"saywho: {e}", file=sys.stderr)
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
