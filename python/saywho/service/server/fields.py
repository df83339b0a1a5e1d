"""OpenAI's form fields -> saywho's keywords: the one table, and the parsing.

``OPTION_FIELDS`` names each multipart field as OpenAI's API (or
faster-whisper/WhisperX, for the extensions) spells it, and the
``saywho.TranscribeOptions`` field it sets; the speaker counts are
saywho.diarization.speaker_counts' names. Neither is declared here a second time: a
field's text becomes a value, and is checked, by the declaration
(``whisper.options.from_text``, ``speaker_counts.parse_count``), and what
it refuses is a 400 naming the form field.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..._internal.native import OptionError
from ...diarization import speaker_counts
from ...whisper.options import NAMES, from_text, read_bool
from .errors import APIError, bad_field

# OpenAI field -> TranscribeOptions field (faster-whisper's names). The
# speaker counts (num/min/max_speakers) keep their names; see SPEAKER_FIELDS.
OPTION_FIELDS: dict[str, str] = {
    "language": "language",
    "prompt": "initial_prompt",
    "temperature": "temperature",
    "beam_size": "beam_size",
    "hotwords": "hotwords",
    "vad_filter": "vad_filter",
}
assert set(OPTION_FIELDS.values()) <= set(NAMES), "OPTION_FIELDS names an option saywho lacks"
# translations take no language (English is the target) and find no speakers
TRANSLATION_FIELDS = {k: v for k, v in OPTION_FIELDS.items() if k != "language"}
# fields that ask for speakers: any of them turns diarization on
SPEAKER_FIELDS = (*speaker_counts.NAMES, "diarization")
# OpenAI's server_vad knobs -> saywho.audio.vad.VadOptions (faster-whisper's names)
SERVER_VAD_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "threshold": ("threshold", float),
    "prefix_padding_ms": ("speech_pad_ms", int),
    "silence_duration_ms": ("min_silence_duration_ms", int),
}
RESPONSE_FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json")
TRANSLATION_FORMATS = ("json", "text", "srt", "vtt", "verbose_json")
GRANULARITIES = ("word", "segment")


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


def _option(name: str, option: str, text: str):
    """A form field's value, read and checked by the option's declaration."""
    try:
        if option in speaker_counts.NAMES:
            return speaker_counts.parse_count(text, name)
        return from_text(option, text, label=name)
    except OptionError as error:
        raise bad_field(name, str(error)) from None


def _parse(name: str, text: str, parse: Callable[[str], object]):
    """server_vad's knobs (checked by saywho.audio.vad when used)."""
    try:
        return parse(text)
    except ValueError:
        kind = "a whole number" if parse is int else "a number"
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


# every field a request may send; any other is refused, never silently dropped
# (as OpenAI answers "Unrecognized request argument"): a client sending
# openai's newer fields (keywords, languages) learns saywho does not use them
LIST_FIELDS = (
    "timestamp_granularities",
    "include",
    "known_speaker_names",
    "known_speaker_references",
)
KNOWN_FIELDS = {
    "file",
    "model",
    "response_format",
    "stream",
    "task",  # jobs
    "diarization",
    "chunking_strategy",
    *OPTION_FIELDS,
    *speaker_counts.NAMES,
    *LIST_FIELDS,
    *(f + "[]" for f in LIST_FIELDS),
    *(f"chunking_strategy[{k}]" for k in ("type", *SERVER_VAD_FIELDS)),
}


def _unknown_fields(form) -> None:
    unknown = sorted(set(form) - KNOWN_FIELDS)
    if unknown:
        raise APIError(
            400,
            f"Unrecognized request argument supplied: {unknown[0]} (saywho serve does not use it)",
            param=unknown[0],
            code="unknown_parameter",
        )


def parse_form(form, task: str) -> AudioRequest:
    """The request's fields, parsed; file and model presence checked by the route."""
    _unknown_fields(form)
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
    request.stream = stream is not None and _stream(stream)
    fields = dict(OPTION_FIELDS, **{n: n for n in speaker_counts.NAMES})
    for name, option in (fields if task == "transcribe" else TRANSLATION_FIELDS).items():
        text = _one(form, name)
        if text is not None:
            request.options[option] = _option(name, option, text)
    counts = {n: request.options.get(n) for n in speaker_counts.NAMES}
    try:  # the counts together, by the one rule (num with min/max, min > max)
        speaker_counts.SpeakerCounts(**counts)
    except OptionError as error:
        raise bad_field([n for n in counts if counts[n] is not None][-1], str(error)) from None
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


def _stream(text: str) -> bool:
    try:
        return read_bool(text)  # the words a bool option takes
    except ValueError:
        raise bad_field("stream", f"stream must be true or false, not {text!r}") from None
