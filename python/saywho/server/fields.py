"""OpenAI's form fields -> saywho's keywords: the one table, and the parsing.

Each row names a multipart field as OpenAI's API (or faster-whisper/WhisperX,
for the extensions) spells it, the keyword saywho's ``Pipeline.process`` /
``Pipeline.transcribe`` takes it as, and how the text of the form becomes a
Python value. Values are not checked here: saywho checks them where it uses
them and raises OptionError, which the routes answer with a 400. When saywho
gains one options object, this table is the one place to point at it.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..pipeline import Pipeline
from ..whisper.transcribe import WhisperModel
from .errors import APIError, bad_field


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not true or false")


def _text(text: str) -> str:
    return text


# OpenAI field -> (saywho keyword, parser). The decoder's keywords are
# faster-whisper's names, which Pipeline.process passes on to Whisper.
OPTION_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "language": ("language", _text),
    "prompt": ("initial_prompt", _text),
    "temperature": ("temperature", float),
    "beam_size": ("beam_size", int),
    "hotwords": ("hotwords", _text),
    "vad_filter": ("vad_filter", _bool),
    "num_speakers": ("num_speakers", int),
    "min_speakers": ("min_speakers", int),
    "max_speakers": ("max_speakers", int),
}
# fields that ask for speakers: any of them turns diarization on
SPEAKER_FIELDS = ("num_speakers", "min_speakers", "max_speakers", "diarization")
# OpenAI's server_vad knobs -> saywho.vad.VadOptions (faster-whisper's names)
SERVER_VAD_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "threshold": ("threshold", float),
    "prefix_padding_ms": ("speech_pad_ms", int),
    "silence_duration_ms": ("min_silence_duration_ms", int),
}
RESPONSE_FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json")
TRANSLATION_FORMATS = ("json", "text", "srt", "vtt", "verbose_json")
GRANULARITIES = ("word", "segment")


def _accepted_keywords() -> frozenset[str]:
    """Keywords this saywho's process/transcribe take; a row naming one they
    lack is refused with a 400 rather than passed on to fail deeper."""
    names = set(inspect.signature(Pipeline.process).parameters)
    names |= set(inspect.signature(WhisperModel.transcribe).parameters)
    return frozenset(names)


ACCEPTED = _accepted_keywords()


@dataclass
class AudioRequest:
    """One transcription or translation, as the worker runs it."""

    task: str  # "transcribe" or "translate"
    model: str  # as the client named it
    response_format: str = "json"
    stream: bool = False
    words: bool = False  # timestamp_granularities[] has "word"
    segments: bool = True  # timestamp_granularities[] has "segment" (or none given)
    logprobs: bool = False  # include[] has "logprobs"
    diarize: bool = False
    diarization: str | None = None  # pyannote's pipeline by name
    options: dict = field(default_factory=dict)  # saywho keywords for process/transcribe
    known_speakers: dict[str, bytes] = field(default_factory=dict)  # name -> audio bytes

    def to_record(self) -> dict:
        """A JSON-able form, for the jobs table."""
        record = dict(self.__dict__)
        record["known_speakers"] = {
            k: base64.b64encode(v).decode("ascii") for k, v in self.known_speakers.items()
        }
        return record

    @classmethod
    def from_record(cls, record: dict) -> AudioRequest:
        record = dict(record)
        record["known_speakers"] = {
            k: base64.b64decode(v) for k, v in record.get("known_speakers", {}).items()
        }
        return cls(**record)


def _one(form, name: str) -> str | None:
    values = form.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise bad_field(name, f"{name} was given {len(values)} times; give it once")
    value = values[0]
    if not isinstance(value, str):
        raise bad_field(name, f"{name} must be a form field, not a file")
    return value


def _many(form, name: str) -> list[str]:
    """``name[]`` as OpenAI's client sends lists (and plain ``name`` repeated)."""
    values = form.getlist(name + "[]") + form.getlist(name)
    for v in values:
        if not isinstance(v, str):
            raise bad_field(name, f"{name} must be form fields, not files")
    return values


def _parse(name: str, text: str, parse: Callable[[str], object]):
    try:
        return parse(text)
    except ValueError:
        kind = {int: "a whole number", float: "a number", _bool: "true or false"}.get(
            parse, "a value"
        )
        raise bad_field(name, f"{name} must be {kind}, not {text!r}") from None


def _chunking(form) -> dict:
    """``chunking_strategy``: "auto" or server_vad's knobs -> saywho's VAD."""
    raw = _one(form, "chunking_strategy")
    nested = {
        key: _one(form, f"chunking_strategy[{key}]")
        for key in ("type", *SERVER_VAD_FIELDS)
        if _one(form, f"chunking_strategy[{key}]") is not None
    }
    if raw is None and not nested:
        return {}
    if raw is not None and raw.strip().startswith("{"):
        try:
            nested = {k: str(v) for k, v in json.loads(raw).items()}
        except (ValueError, AttributeError):
            raise bad_field("chunking_strategy", "chunking_strategy is not a JSON object") from None
    elif raw is not None:
        if raw != "auto":
            raise bad_field(
                "chunking_strategy", f'chunking_strategy must be "auto" or an object, not {raw!r}'
            )
        return {"vad_filter": True}
    if nested.get("type") != "server_vad":
        raise bad_field("chunking_strategy", 'chunking_strategy\'s type must be "server_vad"')
    vad = {
        keyword: _parse(f"chunking_strategy.{name}", nested[name], parse)
        for name, (keyword, parse) in SERVER_VAD_FIELDS.items()
        if name in nested
    }
    return {"vad_filter": True, "vad_parameters": vad or None}


HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?:;[^,;]*)*?;base64,(?P<data>.*)$", re.S)


def _known_speakers(form) -> dict[str, bytes]:
    names = _many(form, "known_speaker_names")
    references = _many(form, "known_speaker_references")
    if len(names) != len(references):
        raise bad_field(
            "known_speaker_references",
            f"{len(names)} known_speaker_names but {len(references)} known_speaker_references; "
            "give one reference per name",
        )
    speakers: dict[str, bytes] = {}
    for name, url in zip(names, references):
        if not name.strip():
            raise bad_field("known_speaker_names", "a known speaker's name is empty")
        if name in speakers:
            raise bad_field("known_speaker_names", f"the name {name!r} is given twice")
        match = DATA_URL.match(url.strip())
        if match is None:
            raise bad_field(
                "known_speaker_references",
                f"the reference for {name!r} is not a base64 data URL (data:audio/wav;base64,...)",
            )
        try:
            speakers[name] = base64.b64decode(match["data"], validate=True)
        except (binascii.Error, ValueError):
            raise bad_field(
                "known_speaker_references", f"the reference for {name!r} is not valid base64"
            ) from None
    return speakers


def parse_form(form, task: str) -> AudioRequest:
    """The request's fields, parsed; file and model presence checked by the route."""
    model = _one(form, "model")
    if not model:
        raise bad_field("model", "model is required (whisper-1, or a name saywho loads)")
    formats = RESPONSE_FORMATS if task == "transcribe" else TRANSLATION_FORMATS
    response_format = _one(form, "response_format") or "json"
    if response_format not in formats:
        raise bad_field(
            "response_format",
            f"response_format must be one of {', '.join(formats)}, not {response_format!r}",
        )
    request = AudioRequest(task=task, model=model, response_format=response_format)
    stream = _one(form, "stream")
    request.stream = stream is not None and _parse("stream", stream, _bool)
    fields = OPTION_FIELDS if task == "transcribe" else _translation_fields()
    for name, (keyword, parse) in fields.items():
        text = _one(form, name)
        if text is None:
            continue
        if keyword not in ACCEPTED:
            raise bad_field(name, f"{name} is not supported by this saywho's transcriber yet")
        request.options[keyword] = _parse(name, text, parse)
    request.options.update(_chunking(form))
    granularities = _many(form, "timestamp_granularities")
    for g in granularities:
        if g not in GRANULARITIES:
            raise bad_field(
                "timestamp_granularities",
                f"timestamp_granularities are word and segment, not {g!r}",
            )
    if granularities:
        request.words = "word" in granularities
        request.segments = "segment" in granularities
    for item in _many(form, "include"):
        if item != "logprobs":
            raise bad_field("include", f"include knows logprobs only, not {item!r}")
        request.logprobs = True
    request.diarization = _one(form, "diarization")
    if request.diarization is not None and not _hub_name(request.diarization):
        # a folder holding a config.yaml is the operator's choice, not a client's
        raise bad_field(
            "diarization",
            "diarization is pyannote's pipeline by its hub name "
            "(pyannote/speaker-diarization-community-1), not a path",
        )
    request.known_speakers = _known_speakers(form)
    if request.known_speakers and "known_speakers" not in ACCEPTED:
        raise bad_field(
            "known_speaker_names",
            "known speakers need a saywho whose Pipeline.process takes known_speakers",
        )
    if task == "translate":
        request.options["task"] = "translate"
    request.diarize = task == "transcribe" and (
        response_format == "diarized_json"
        or any(_one(form, f) is not None for f in SPEAKER_FIELDS)
        or bool(request.known_speakers)
    )
    if request.words or request.logprobs or request.diarize:
        request.options["word_timestamps"] = True
    return request


def _hub_name(value: str) -> bool:
    return bool(HUB_NAME.match(value)) and ".." not in value and not os.path.exists(value)


def _translation_fields() -> dict:
    # translations take OpenAI's prompt and temperature, and the decoder's extensions
    speakers = {"num_speakers", "min_speakers", "max_speakers", "language"}
    return {k: v for k, v in OPTION_FIELDS.items() if k not in speakers}


def check_model_field(request: AudioRequest) -> None:
    if len(request.model) > 200:
        raise APIError(400, "model name is too long", param="model", code="invalid_value")
