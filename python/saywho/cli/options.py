"""The processing options every saywho command shares, declared once.

``saywho`` and ``saywho batch`` (and whatever command comes next) add the
same options to their parsers with :func:`add_processing_options`, check
them with :func:`check_processing_options` and turn them into the keyword
arguments of ``Pipeline(...)``, ``Pipeline.process(...)`` and
``Result.write(...)`` with :func:`pipeline_kwargs`, :func:`process_kwargs`
and :func:`write_kwargs`, so a new option is
written in one place and means the same in every command.
"""

from __future__ import annotations

import argparse

from .._internal.native import OptionError
from ..audio.vad import VadOptions
from ..diarization.speaker_counts import SpeakerCounts, parse_count
from ..formats.writers import FORMATS
from ..models.hub import AUTO
from ..whisper import compute_types
from ..whisper.compute_types import COMPUTE_TYPES
from ..whisper.options import flag_name, flagged, from_text, read_bool

# --format all (WhisperX's --output_format all): every format the run allows
ALL_FORMATS = "all"


def positive(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not at least 1")
    return value


def _speaker_count(text: str) -> int:
    """argparse type of the speaker counts (saywho.diarization.speaker_counts' rule)."""
    try:
        return parse_count(text, "a speaker count")
    except OptionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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
    """NAME=VALUE, a field of saywho.audio.vad.VadOptions and a number."""
    import dataclasses

    name, sep, value = text.partition("=")
    names = [f.name for f in dataclasses.fields(VadOptions)]
    if not sep or name not in names:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with NAME one of {names}")
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: {value!r} is not a number") from None
    return name, int(number) if number.is_integer() and name.endswith("_ms") else number


MODEL_HELP = (
    "Whisper model: a name (tiny.en, small, large-v3-turbo, ...), a Hugging Face repo id "
    "or a folder (default: auto, large-v3-turbo on a GPU and small on the CPU, downloaded "
    'on first use: pip install "saywho[hub]")'
)


def add_model_options(p: argparse.ArgumentParser, model_help: str = MODEL_HELP) -> None:
    """--model, --device and --compute-type: which Whisper runs where; every
    command that loads a model (saywho, saywho batch, saywho serve) takes them
    from here."""
    p.add_argument("--model", default=AUTO, help=model_help)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N (default auto)")
    p.add_argument(
        *_flags("--compute-type"),
        default="default",
        choices=COMPUTE_TYPES,
        help=compute_types.HELP,
    )


def _flag_type(f):
    """argparse type of an option's flag: the text read as the option's
    declared kind and checked by its own check (whisper.options.from_text)."""

    def parse(text: str):
        try:
            return from_text(f.name, text)
        except OptionError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _underscored(flag: str) -> str:
    """WhisperX's (and Whisper's) spelling of a flag: --min_speakers."""
    return "--" + flag[2:].replace("-", "_")


def _flags(*flags: str) -> list[str]:
    """The flags with their underscore spellings added, each once."""
    return list(dict.fromkeys([*flags, *map(_underscored, flags)]))


def _add_switch(p, flag: str, dest: str, default: bool, help: str, also: str = "") -> None:
    """A true/false option: --flag and --no-flag, and WhisperX's
    --the_flag [true|false] (its str2bool), which takes a value; ``also``:
    another name taking a value (faster-whisper's --vad_filter for --vad)."""
    p.add_argument(
        flag, dest=dest, action=argparse.BooleanOptionalAction, default=default, help=help
    )
    valued = [name for name in _flags(flag, *([also] if also else [])) if name != flag]
    if valued:
        p.add_argument(
            *valued,
            dest=dest,
            type=read_bool,
            nargs="?",
            const=True,
            default=argparse.SUPPRESS,
            help=argparse.SUPPRESS,
        )


def add_transcription_flags(p: argparse.ArgumentParser) -> None:
    """A flag for every transcription option the command line offers
    (saywho.TranscribeOptions declares which, with their defaults and help),
    under its --dashed and --underscored spellings; the flag's value lands
    in ``args.<option name>``."""
    for f in flagged():
        if f.type == "bool":
            also = "--" + f.name if f.metadata["flag"] else ""  # --vad: also --vad_filter
            _add_switch(p, flag_name(f), f.name, f.default, f.metadata["help"], also)
        else:
            aliases = ["--logprob_threshold"] if f.name == "log_prob_threshold" else []
            p.add_argument(
                *_flags(flag_name(f)),
                *aliases,  # WhisperX's spelling of faster-whisper's name
                dest=f.name,
                type=_flag_type(f),
                default=f.default,
                metavar=f.name.upper(),
                help=f.metadata["help"],
            )


def add_processing_options(p: argparse.ArgumentParser, output_help: str) -> None:
    """Adds the model, device, speaker, decoding and output options to ``p``."""
    add_model_options(p)
    speakers = p.add_mutually_exclusive_group()
    speakers.add_argument(
        *_flags("--num-speakers"), type=_speaker_count, help="the number of speakers, if known"
    )
    speakers.add_argument(*_flags("--no-speakers"), action="store_true", help="transcribe only")
    p.add_argument(
        *_flags("--min-speakers"), type=_speaker_count, help="at least this many speakers"
    )
    p.add_argument(
        *_flags("--max-speakers"), type=_speaker_count, help="at most this many speakers"
    )
    p.add_argument(
        "--diarization",
        metavar="NAME",
        help="pyannote's pipeline by name: pyannote/speaker-diarization-3.1 or "
        "pyannote/speaker-diarization-community-1 (or a folder holding its config.yaml); "
        "default: saywho's own models",
    )
    p.add_argument(
        *_flags("--hf-token"),
        metavar="TOKEN",
        help="Hugging Face token for --diarization's gated repos (default: HF_TOKEN, or the "
        "token huggingface_hub stored at login)",
    )
    p.add_argument(
        *_flags("--embedding-step"),
        type=float,
        metavar="SECONDS",
        help="embed each speaker only in chunks this far apart, the chunks between reusing "
        "those embeddings (a multiple of the 1 s chunk step; 2 is about twice as fast, an "
        "approximation); default: every chunk, as pyannote",
    )
    p.add_argument(*_flags("--threads"), type=int, default=0, help="CPU threads (0: one per CPU)")
    add_transcription_flags(p)
    p.add_argument(
        *_flags("--vad-parameter"),
        type=_vad_parameter,
        action="append",
        metavar="NAME=VALUE",
        help="a Silero VAD setting (faster-whisper's vad_parameters: threshold, neg_threshold, "
        "min_speech_duration_ms, max_speech_duration_s, min_silence_duration_ms, "
        "speech_pad_ms); repeatable; turns --vad on",
    )
    p.add_argument("-o", *_flags("--output-dir"), help=output_help)
    p.add_argument(
        "--format",
        "--output_format",  # WhisperX's
        "--output-format",
        action="append",
        choices=(*FORMATS, ALL_FORMATS),
        help="transcript format to write (repeatable; default and 'all': every one the run "
        "allows, rttm only with speakers)",
    )
    p.add_argument(
        "--speaker",
        action="append",
        type=_known_speaker,
        metavar="NAME=FILE",
        help="a known voice: the found speaker who sounds like FILE is called NAME "
        "(repeatable; a NAME given twice averages its files)",
    )
    _add_switch(
        p,
        "--fill-nearest",
        "fill_nearest",
        True,
        "a word between speaker turns takes the nearest speaker (default; "
        "--no-fill-nearest leaves it UNKNOWN)",
    )
    p.add_argument(
        "--max_line_width",
        "--max-line-width",
        type=positive,
        metavar="N",
        help="subtitles (srt, vtt): at most N characters a line",
    )
    p.add_argument(
        "--max_line_count",
        "--max-line-count",
        type=positive,
        metavar="N",
        help="subtitles: at most N lines a cue (needs --max_line_width)",
    )
    _add_switch(
        p,
        "--highlight-words",
        "highlight_words",
        False,
        "subtitles: underline each word while it is spoken",
    )


def check_processing_options(args, parser: argparse.ArgumentParser) -> None:
    """Usage errors among the shared options (exits with 2, as argparse does)."""
    if args.no_speakers and (args.min_speakers or args.max_speakers):
        parser.error("--min-speakers and --max-speakers need speakers (drop --no-speakers)")
    try:  # the library's one rule (saywho.diarization.speaker_counts), as usage errors
        SpeakerCounts(args.num_speakers, args.min_speakers, args.max_speakers)
    except OptionError as e:
        parser.error(str(e))
    if args.threads < 0:
        parser.error("--threads must be 0 or more")
    if args.diarization and args.no_speakers:
        parser.error("--diarization needs speakers (drop --no-speakers)")
    if args.speaker and args.no_speakers:
        parser.error("--speaker needs speakers (drop --no-speakers)")
    if args.format and "rttm" in args.format and args.no_speakers:
        parser.error("the rttm format needs speakers (drop --no-speakers or --format rttm)")
    if args.max_line_count and not args.max_line_width:
        parser.error("--max_line_count needs --max_line_width")


def pipeline_kwargs(args) -> dict:
    """``Pipeline(**pipeline_kwargs(args))``."""
    return {
        "model": args.model,
        "device": args.device,
        "threads": args.threads,
        "compute_type": args.compute_type,
        "diarization": args.diarization,
        "token": args.hf_token,
        "embedding_step": args.embedding_step,
    }


def process_kwargs(args) -> dict:
    """``pipeline.process(path, **process_kwargs(args))``: plain values only,
    so the dict can travel to another process (saywho batch --ray)."""
    kwargs = {
        "diarize": not args.no_speakers,
        "num_speakers": args.num_speakers,
        "min_speakers": args.min_speakers,
        "max_speakers": args.max_speakers,
        "beam_size": args.beam_size,
        "language": args.language,
        "word_timestamps": args.word_timestamps or not args.no_speakers,
        "vad": args.vad_filter or args.batch_size is not None or bool(args.vad_parameter),
        "vad_options": dict(args.vad_parameter) if args.vad_parameter else None,
        "known_speakers": known_speakers(args.speaker),
        "fill_nearest": args.fill_nearest,
    }
    if args.batch_size:
        kwargs["batch_size"] = args.batch_size
    # every other transcription flag the user changed, under its option's name
    for f in flagged():
        if f.name not in kwargs and f.name != "vad_filter" and getattr(args, f.name) != f.default:
            kwargs[f.name] = getattr(args, f.name)
    return kwargs


def write_kwargs(args) -> dict:
    """``result.write(folder, **write_kwargs(args))``: the formats and the
    subtitles' shape."""
    formats = args.format
    if formats and ALL_FORMATS in formats:
        formats = None  # every one the run allows
    return {
        "formats": formats,
        "max_line_width": args.max_line_width,
        "max_line_count": args.max_line_count,
        "highlight_words": args.highlight_words,
    }
