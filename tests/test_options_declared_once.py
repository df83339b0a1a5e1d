"""Transcription's options are declared once (saywho.whisper.options) and
every layer derives from or agrees with that declaration: the keywords of
WhisperModel.transcribe and Pipeline.transcribe, the CLI's flags, the core's
keyword list (python/ext/py_whisper_generate.c), the compute types and the
speaker-count rules. Pipeline.process's own options are declared once too
(saywho.api.process_options), and the stages read the built objects."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
from pathlib import Path

import pytest

import saywho
from saywho._internal.native import _core
from saywho.api import process_options
from saywho.api.process import process as process_stages
from saywho.api.speaker_words import WORD_COVERAGE_THRESHOLD
from saywho.cli.options import add_processing_options, process_kwargs
from saywho.diarization.speaker_counts import SpeakerCounts, parse_count, speaker_bounds
from saywho.whisper import compute_types
from saywho.whisper.generate import SEARCH_ONLY, GenerateOptions, WhisperSpecialTokens
from saywho.whisper.options import (
    DEFAULTS,
    FIELDS,
    NAMES,
    TranscribeOptions,
    flag_name,
    flagged,
)
from saywho.whisper.transcribe import WhisperModel

from .weights import test_model_dir

EXT = Path(__file__).resolve().parents[1] / "python" / "ext"


def _c_strings(source: str, pattern: str) -> list[str]:
    """The string literals of the first C array ``pattern`` opens in ``source``."""
    text = (EXT / source).read_text(encoding="utf-8")
    match = re.search(pattern + r"\s*=\s*\{(.*?)\};", text, re.S)
    assert match, f"{source}: no {pattern}"
    return re.findall(r'"([a-z0-9_]+)"', match.group(1))


def test_transcribe_keywords_are_the_declared_options():
    params = inspect.signature(WhisperModel.transcribe).parameters
    options = [p for p in params.values() if p.name not in ("self", "audio", "options", "progress")]
    assert [p.name for p in options] == list(NAMES)
    assert {p.name: p.default for p in options} == DEFAULTS
    # faster-whisper's names and defaults, a sample of them
    assert DEFAULTS["beam_size"] == 5 and DEFAULTS["temperature"][-1] == 1.0
    assert DEFAULTS["no_speech_threshold"] == 0.6 and DEFAULTS["suppress_tokens"] == (-1,)


def test_every_option_has_help_and_a_flag_unless_declared_without():
    for f in FIELDS:
        assert f.metadata["help"].strip(), f.name
    # every option has a flag but vad_parameters (--vad-parameter NAME=VALUE)
    assert [f.name for f in flagged()] == [n for n in NAMES if n != "vad_parameters"]
    assert flag_name(TranscribeOptions.__dataclass_fields__["vad_filter"]) == "--vad"
    assert flag_name(TranscribeOptions.__dataclass_fields__["initial_prompt"]) == (
        "--initial-prompt"
    )


def test_cli_flags_come_from_the_declaration():
    parser = argparse.ArgumentParser()
    add_processing_options(parser, "out")
    by_dest = {}  # each option's first action; WhisperX's --the_name follows it
    for a in parser._actions:
        by_dest.setdefault(a.dest, a)
    for f in flagged():
        action = by_dest[f.name]
        assert action.option_strings[0] == flag_name(f)
        assert action.default == f.default and action.help == f.metadata["help"]
    # no option is declared a second time by hand under another flag
    option_flags = {flag_name(f) for f in flagged()}
    option_flags |= {"--" + f.name for f in flagged()}  # WhisperX's spelling, its own action
    for action in parser._actions:
        if action.dest in NAMES:
            assert action.option_strings[0] in option_flags, action.option_strings
    # the flag's value goes through the option's own check
    with pytest.raises(SystemExit):
        parser.parse_args(["--beam-size", "0"])
    args = parser.parse_args(["--beam-size", "2", "--language", "fr", "--batch-size", "4"])
    kwargs = process_kwargs(args)
    assert kwargs["beam_size"] == 2 and kwargs["language"] == "fr" and kwargs["batch_size"] == 4
    assert kwargs["vad"] is True  # the batched mode cuts at speech pauses


def test_keywords_build_the_object_and_it_checks_them():
    built = TranscribeOptions.build(None, {"beam_size": 2}, ["fr", "translate"])
    assert built == TranscribeOptions(language="fr", task="translate", beam_size=2)
    assert built.changed() == {"language": "fr", "task": "translate", "beam_size": 2}
    assert TranscribeOptions.build(built, {"beam_size": 3}).beam_size == 3
    for bad in (
        {"beam_size": 0},
        {"task": "dance"},
        {"patience": 0},
        {"batch_size": True},
        {"repetition_guard": 0},
        {"no_repeat_ngram_size": -1},
        {"clip_timestamps": "a,b"},
        {"vad_parameters": {"no_such": 1}},
        {"beam_sise": 5},
    ):
        name = next(iter(bad))
        with pytest.raises(saywho.OptionError, match=name):
            TranscribeOptions.build(None, bad)
    with pytest.raises(saywho.OptionError, match="options must be"):
        TranscribeOptions.build({"beam_size": 1})


def test_core_keyword_list_agrees_with_generate_options():
    """_core.whisper_generate's keywords are the call's fixed arguments, the
    special tokens, GenerateOptions' fields in order, and the config's lists."""
    kwlist = _c_strings("py_whisper_generate.c", r"static char \*kwlist\[\]")
    special = [f.name for f in dataclasses.fields(WhisperSpecialTokens)]
    special = ["n_vocab" if n == "vocab_size" else n for n in special]
    generate = [f.name for f in dataclasses.fields(GenerateOptions)]
    assert kwlist == [
        "model",
        "encoder_output",
        "prompts",
        *special,
        *generate,
        "suppress_ids",
        "suppress_ids_begin",
        "seed",
    ]
    # a GenerateOptions field is an option of the same name and default, or
    # one the search sets itself
    for f in dataclasses.fields(GenerateOptions):
        if f.name in SEARCH_ONLY:
            assert f.name not in NAMES
        else:
            assert f.default == DEFAULTS[f.name], f.name


def test_compute_types_are_one_table():
    """The core lists the compute types (whisper_compute.c) in
    sw_whisper_compute's order; Python reads that list and the core's rule."""
    header = (EXT.parent.parent / "csrc/whisper/whisper_model.h").read_text(encoding="utf-8")
    enum = re.findall(r"SW_WHISPER_(\w+) = \d", header)
    assert [e.lower() for e in enum] == list(compute_types.CORE_COMPUTE_TYPES)
    resolved = {compute_types.resolve_compute_type(n) for n in compute_types.COMPUTE_TYPES}
    assert resolved == set(compute_types.CORE_COMPUTE_TYPES)
    runtime = _core.Runtime(device="cpu")
    computed = set()
    for compute in compute_types.CORE_COMPUTE_TYPES:
        try:
            compute_types.check_compute_type_on(compute, runtime)
            computed.add(compute)
        except saywho.OptionError as e:
            assert "needs a GPU" in str(e) and "device='cuda'" in str(e)
    assert computed == {"float32", "int8", "bfloat16"}
    with pytest.raises(saywho.OptionError, match="'float16' needs a GPU"):
        compute_types.check_compute_type_on("float16", runtime)
    runtime.close()
    assert "int16" in compute_types.NOT_BUILT
    for name in compute_types.NOT_BUILT:
        with pytest.raises(saywho.OptionError, match="not built"):
            compute_types.resolve_compute_type(name)


def test_speaker_count_rules_are_one():
    assert speaker_bounds(2, None, None) == (2, 2, 2)
    assert speaker_bounds(None, 2, 3) == (None, 2, 3)
    assert SpeakerCounts(None, 2, None).bounds()[1:] == (2, float("inf"))
    assert SpeakerCounts(min_speakers=2).keywords() == {"min_speakers": 2}
    assert parse_count(" 3 ") == 3 and parse_count("") is None
    for bad in ((0, None, None), (None, True, None), (None, 3, 2), (2, 1, None), (2, None, 2)):
        with pytest.raises(_core.OptionError):
            speaker_bounds(*bad)
        with pytest.raises(_core.OptionError):
            SpeakerCounts(*bad)
    with pytest.raises(_core.OptionError, match="not both"):
        SpeakerCounts(num_speakers=2, max_speakers=3)
    for text in ("0", "two", "2.5"):
        with pytest.raises(_core.OptionError, match="num_speakers"):
            parse_count(text)
    assert SpeakerCounts.from_text({"num_speakers": " 2", "language": "en"}).num_speakers == 2
    with pytest.raises(_core.OptionError, match="min_speakers"):
        SpeakerCounts.from_text({"min_speakers": "0"})


def test_process_options_are_declared_once():
    """Pipeline.process's keywords are ProcessOptions' fields, then
    TranscribeOptions', with their defaults; the stages take the built
    objects (no keyword list passed on again); the CLI builds its call from
    the same names."""
    params = inspect.signature(saywho.Pipeline.process).parameters
    callbacks = ("self", "audio", "progress", "on_segment", "options")
    declared = [p for p in params.values() if p.name not in callbacks]
    assert [p.name for p in declared] == [*process_options.NAMES, *NAMES]
    assert not set(process_options.NAMES) & set(NAMES)
    process_defaults = {f.name: f.default for f in process_options.FIELDS}
    assert {p.name: p.default for p in declared} == {**process_defaults, **DEFAULTS}
    assert process_defaults["threshold"] == WORD_COVERAGE_THRESHOLD
    assert list(inspect.signature(process_stages).parameters) == [
        "pipeline",
        "audio",
        "settings",
        "whisper_options",
        "progress",
        "on_segment",
    ]
    parser = argparse.ArgumentParser()
    add_processing_options(parser, "out")
    kwargs = process_kwargs(parser.parse_args(["--num-speakers", "2"]))
    assert set(kwargs) <= set(process_options.NAMES) | set(NAMES)
    settings, whisper = process_options.ProcessOptions.split(kwargs)
    assert settings.speakers == SpeakerCounts(num_speakers=2) and whisper.word_timestamps
    # diarize None is the Pipeline's default; vad is transcription's vad_filter too
    settings, whisper = process_options.ProcessOptions.split({"vad": True}, None, False)
    assert settings.diarize is False and whisper.vad_filter and not whisper.word_timestamps
    settings, _ = process_options.ProcessOptions.split({"vad_filter": True})
    assert settings.vad


def test_process_checks_speaker_counts_before_reading_audio(tmp_path):
    """The counts are refused before any audio is decoded: a missing file
    raises the OptionError, not the AudioError (the same rule as the CLI's)."""
    missing = tmp_path / "not_there.wav"
    with saywho.Pipeline(test_model_dir("tiny.en"), device="cpu", log_memory=False) as p:
        for bad in (
            {"num_speakers": 2, "min_speakers": 1},
            {"min_speakers": 3, "max_speakers": 2},
            {"num_speakers": 0},
        ):
            with pytest.raises(saywho.OptionError, match="speakers"):
                p.process(missing, **bad)
            with pytest.raises(saywho.OptionError, match="speakers"):
                p.diarize(missing, **bad)
        with pytest.raises(saywho.AudioError, match="not_there"):
            p.process(missing, num_speakers=2)


def test_keywords_and_the_object_transcribe_alike(whisper_models, jfk_wav):
    """The same options given as keywords, positionally or whole give the
    same segments; the info's options are the object as decoded."""
    model = whisper_models["tiny.en"]
    audio = saywho.load_audio(jfk_wav)
    by_keyword, info = model.transcribe(audio, beam_size=1, word_timestamps=True)
    by_keyword = list(by_keyword)
    whole = TranscribeOptions(beam_size=1, word_timestamps=True)
    by_object, info2 = model.transcribe(audio, options=whole)
    positional, _ = model.transcribe(audio, "en", "transcribe", 1, word_timestamps=True)
    assert by_keyword == list(by_object) == list(positional)
    assert by_keyword and by_keyword[0].words
    assert isinstance(info.options, TranscribeOptions) and info.options == info2.options
    assert info.options.beam_size == 1 and -1 not in info.options.suppress_tokens


def test_pipeline_checks_options_before_reading_audio(tmp_path):
    missing = tmp_path / "not_there.wav"
    with saywho.Pipeline(test_model_dir("tiny.en"), device="cpu", log_memory=False) as p:
        with pytest.raises(saywho.OptionError, match="beam_size"):
            p.transcribe(missing, beam_size=0)
        with pytest.raises(saywho.OptionError, match="best_of"):
            p.process(missing, diarize=False, best_of=0)
        with pytest.raises(saywho.AudioError):
            p.transcribe(missing, options=TranscribeOptions(beam_size=1))
        with pytest.raises(saywho.AudioError):
            p.process(missing, diarize=False, options=TranscribeOptions(beam_size=1))
    # help() and the server see every option as a keyword of both
    for method in (saywho.Pipeline.transcribe, saywho.Pipeline.process):
        assert set(NAMES) <= set(inspect.signature(method).parameters)


def test_server_fields_read_and_check_through_the_declaration():
    """The server's form fields set declared options (or speaker counts) and
    refuse a value with the declaration's own message, as a 400 naming the
    form field; translations take the same fields less language and speakers."""
    from starlette.datastructures import FormData

    from saywho.service.server import fields
    from saywho.service.server.errors import APIError

    assert set(fields.OPTION_FIELDS.values()) <= set(NAMES)
    assert fields.OPTION_FIELDS["prompt"] == "initial_prompt"

    def parse(task="transcribe", **form):
        return fields.parse_form(FormData({"model": "whisper-1", **form}), task)

    def refused(name, text, task="transcribe"):
        with pytest.raises(APIError) as caught:
            parse(task, **{name: text})
        assert caught.value.status == 400 and caught.value.param == name
        return caught.value.message

    with pytest.raises(_core.OptionError) as declared:
        TranscribeOptions(beam_size=0)
    assert refused("beam_size", "0") == str(declared.value)
    with pytest.raises(_core.OptionError) as declared:
        parse_count("0", "min_speakers")
    assert refused("min_speakers", "0") == str(declared.value)
    assert "temperature" in refused("temperature", "hot")
    # the range is the declaration's: the library and the form refuse alike
    for text in ("5", "-1", "inf", "nan"):
        with pytest.raises(_core.OptionError) as declared:
            TranscribeOptions(temperature=float(text))
        assert "0 to 1" in str(declared.value)
        assert refused("temperature", text) == str(declared.value)
    with pytest.raises(_core.OptionError):
        TranscribeOptions(temperature=(0.0, 0.5, 1.5))
    assert TranscribeOptions(temperature=(0.0, 1.0)).temperatures == (0.0, 1.0)
    assert "vad_filter" in refused("vad_filter", "maybe")

    request = parse(
        prompt="Kennedy",
        temperature="0.2",
        beam_size="2",
        vad_filter="yes",
        num_speakers="2",
        language="en",
    )
    assert request.options == {
        "initial_prompt": "Kennedy",
        "temperature": 0.2,
        "beam_size": 2,
        "vad_filter": True,
        "num_speakers": 2,
        "language": "en",
        "word_timestamps": True,
    }
    TranscribeOptions.build(None, {k: v for k, v in request.options.items() if k in NAMES})
    translated = parse("translate", language="fr", num_speakers="2", beam_size="1")
    assert translated.options == {"beam_size": 1, "task": "translate"}
