"""Transcription's options, declared once: name, default, type, range and help.

``TranscribeOptions`` holds every option ``WhisperModel.transcribe`` takes,
with faster-whisper's names and defaults. Everything else reads it: the
keywords of ``transcribe`` / ``Pipeline.transcribe`` / ``Pipeline.process``
build one (and one can be passed whole as ``options=``), the sequential seek
loop and the batched path read its fields, ``TranscriptionInfo.options`` is
one, the command line's decoding flags are made from the fields that name a
flag, and the C core's keyword list (python/ext/py_whisper_generate.c) is
checked against ``GenerateOptions`` by tests/test_options_declared_once.py.

A field's ``metadata`` holds its ``help`` text, its ``check`` (a function
returning what is wrong with a value, or None) and its command-line ``flag``:
None for ``--the-name`` (the CLI also takes ``--the_name``, WhisperX's
spelling), a string for another spelling, False for none. Values are
checked when the object is made, so a bad option fails before any audio is
read.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._internal.native import _core
from ..audio.vad import vad_options
from .clips import clip_seconds

Check = Callable[[Any], "str | None"]


def _option(default, help: str, check: Check | None = None, flag: str | bool | None = None):
    return field(default=default, metadata={"help": help, "check": check, "flag": flag})


# -- checks: each returns what is wrong with a value, or None ------------------


def _whole(low: int, optional: bool = False) -> Check:
    def check(value):
        if optional and value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
            return f"must be an int >= {low}"
        return None

    return check


def _one_of(*choices: str) -> Check:
    def check(value):
        if value not in choices:
            return "must be " + " or ".join(repr(c) for c in choices)
        return None

    return check


def _above_zero(value):
    return None if value > 0 else "must be > 0"


def _temperatures(value):
    # OpenAI's range, and the one Whisper's fallback climbs: above 1 (or inf,
    # or nan) the sampling is noise and the "transcript" garbage
    values = value if isinstance(value, (list, tuple)) else (value,)
    if not values:
        return "must be a number from 0 to 1, or a list of them"
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 <= v <= 1.0:
            return "must be a number from 0 to 1 (or a list of them)"
    return None


def _clips(value):
    clip_seconds(value)  # raises OptionError with the clip format's rules


def _vad(value):
    vad_options(value)  # raises OptionError naming the bad setting


# -- the object ----------------------------------------------------------------


@dataclass(frozen=True)
class TranscribeOptions:
    """Every transcription option, with faster-whisper's names and defaults.

    ``TranscribeOptions(beam_size=1)``; ``options.replace(language="fr")``;
    ``TranscribeOptions.build(None, {"beam_size": 1})`` from keywords.
    """

    language: str | None = _option(None, "language code (default: detect)", flag="--language")
    task: str = _option(
        "transcribe", "'transcribe' or 'translate' (to English)", _one_of("transcribe", "translate")
    )
    beam_size: int = _option(5, "beam size (1: greedy)", _whole(1), flag="--beam-size")
    best_of: int = _option(5, "candidates sampled at a temperature above 0", _whole(1))
    patience: float = _option(1.0, "beam search patience factor", _above_zero)
    length_penalty: float = _option(1.0, "exponent of the length normalisation of scores")
    repetition_penalty: float = _option(1.0, "penalty on tokens already generated (> 1 to avoid)")
    no_repeat_ngram_size: int = _option(0, "n-grams of this size never repeat (0: off)", _whole(0))
    temperature: float | Sequence[float] = _option(
        (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
        "the temperature (0 to 1), or the ones to fall back to when a window fails the thresholds",
        _temperatures,
    )
    compression_ratio_threshold: float | None = _option(
        2.4, "fall back when the text's gzip compression ratio is above this"
    )
    log_prob_threshold: float | None = _option(
        -1.0, "fall back when the average log-probability is below this"
    )
    no_speech_threshold: float | None = _option(
        0.6, "a window whose no-speech probability is above this (and log-prob low) is silent"
    )
    condition_on_previous_text: bool = _option(True, "prompt each window with the text before it")
    prompt_reset_on_temperature: float = _option(
        0.5, "stop conditioning on previous text after a fallback above this temperature"
    )
    initial_prompt: str | Sequence[int] | None = _option(
        None, "text (or token ids) put before the first window"
    )
    prefix: str | None = _option(None, "text the first window's transcript starts with")
    suppress_blank: bool = _option(True, "suppress a blank at the start of sampling")
    suppress_tokens: Sequence[int] | None = _option(
        (-1,), "token ids never generated (-1: the model's non-speech symbols)"
    )
    without_timestamps: bool = _option(False, "decode text only, no timestamp tokens")
    max_initial_timestamp: float = _option(1.0, "the first timestamp is at most this (seconds)")
    max_new_tokens: int | None = _option(
        None, "at most this many tokens a window", _whole(1, optional=True)
    )
    word_timestamps: bool = _option(
        False,
        "time every word (always on when speakers are found: alignment needs them)",
        flag="--word-timestamps",
    )
    hallucination_silence_threshold: float | None = _option(
        None, "with word_timestamps, skip silences longer than this around likely hallucinations"
    )
    prepend_punctuations: str = _option("\"'“¿([{-", "punctuation merged into the following word")
    append_punctuations: str = _option(
        "\"'.。,，!！?？:：”)]}、", "punctuation merged into the preceding word"
    )
    language_detection_threshold: float = _option(
        0.5, "a detected language above this probability ends the detection"
    )
    language_detection_segments: int = _option(
        1, "windows language detection may listen to", _whole(1)
    )
    seed: int = _option(0, "seed of the sampling generator (temperatures above 0)")
    vad_filter: bool = _option(
        False,
        "transcribe only the speech Silero VAD finds (faster-whisper's vad_filter; default off)",
        flag="--vad",
    )
    vad_parameters: Any = _option(
        None,
        "Silero VAD settings: saywho.audio.vad.VadOptions or a dict of its fields",
        _vad,
        flag=False,  # the CLI takes them one at a time: --vad-parameter NAME=VALUE
    )
    batch_size: int | None = _option(
        None,
        "transcribe N speech chunks of up to 30 s at once (faster-whisper's batched mode; "
        "turns --vad on); default: one 30 s window after the other",
        _whole(1, optional=True),
        flag="--batch-size",
    )
    multilingual: bool = _option(False, "detect and decode each window's own language")
    clip_timestamps: str | Sequence[float] | Sequence[dict] | None = _option(
        None, "the stretches to transcribe, in seconds ('0,10.5,20,30')", _clips
    )
    hotwords: str | None = _option(None, "text put in the prompt of every window")
    repetition_guard: int | None = _option(
        None,
        "keep at most N copies of a repeating phrase or segment (saywho's own; None: off)",
        _whole(1, optional=True),
    )

    def __post_init__(self):
        for f in dataclasses.fields(self):
            check = f.metadata["check"]
            value = getattr(self, f.name)
            try:
                problem = check(value) if check is not None else None
            except TypeError:
                problem = "has the wrong type"
            if problem:
                raise _core.OptionError(f"{f.name} {problem}, not {value!r}")

    # -- building ----------------------------------------------------------

    @classmethod
    def build(
        cls,
        options: TranscribeOptions | None = None,
        keywords: Mapping[str, Any] | None = None,
        positional: Iterable[Any] = (),
    ) -> TranscribeOptions:
        """``options`` (or the defaults) with ``keywords`` (and positional
        values, in the fields' order, as faster-whisper's transcribe takes
        them) put in; an unknown name is an OptionError."""
        if options is not None and not isinstance(options, cls):
            raise _core.OptionError(f"options must be a TranscribeOptions, not {options!r}")
        given = dict(zip(NAMES, positional))
        for name, value in (keywords or {}).items():
            if name in given:
                raise _core.OptionError(f"{name} given twice")
            given[name] = value
        unknown = sorted(set(given) - set(NAMES))
        if unknown:
            raise _core.OptionError(
                f"no transcription option named {', '.join(map(repr, unknown))} "
                "(saywho.TranscribeOptions lists them)"
            )
        if options is None:
            return cls(**given)
        return dataclasses.replace(options, **given) if given else options

    def replace(self, **changes) -> TranscribeOptions:
        return dataclasses.replace(self, **changes)

    def changed(self) -> dict[str, Any]:
        """The options that differ from the defaults."""
        return {n: getattr(self, n) for n in NAMES if getattr(self, n) != DEFAULTS[n]}

    # -- derived values the decoding reads ---------------------------------

    @property
    def temperatures(self) -> tuple[float, ...]:
        """``temperature`` as a tuple (one value or several)."""
        t = self.temperature
        return tuple(t) if isinstance(t, (list, tuple)) else (t,)

    @property
    def punctuations(self) -> tuple[str, str] | None:
        """(prepend, append) when words are timed, else None."""
        if not self.word_timestamps:
            return None
        return self.prepend_punctuations, self.append_punctuations


FIELDS = dataclasses.fields(TranscribeOptions)
NAMES: tuple[str, ...] = tuple(f.name for f in FIELDS)
DEFAULTS: dict[str, Any] = {f.name: f.default for f in FIELDS}
BY_NAME: dict[str, dataclasses.Field] = {f.name: f for f in FIELDS}


_TEXT_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false"}


def read_bool(text: str) -> bool:
    """true/1/yes/on or false/0/no/off (any case); else ValueError."""
    value = text.strip().lower()
    if value in ("true", "1", "yes", "on"):
        return True
    if value in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"{text!r} is not true or false")


_LIST_KINDS = {"Sequence[float]": float, "Sequence[int]": int}


def from_text(name: str, text: str, label: str | None = None) -> Any:
    """One option's value from text (a form field, a flag): read as the
    declared type's first kind (int, float, bool or str), then checked as
    the object checks it. Where the declared type also takes a list of
    numbers (``temperature``, ``suppress_tokens``), text with commas
    ("0,0.2,0.4") is that list; where it takes None and is no text, "none"
    is None. An OptionError names ``label`` (default: the option's own
    name)."""
    f = BY_NAME[name]
    kinds = f.type.split(" | ")
    kind = kinds[0]
    label = label or name
    value: Any = text
    try:
        # text first (initial_prompt's token ids stay a Python-only form)
        listed = (
            None
            if kind == "str"
            else next((_LIST_KINDS[k] for k in kinds if k in _LIST_KINDS), None)
        )
        if kind != "str" and "None" in kinds and text.strip().lower() == "none":
            value = None
        elif listed is not None and ("," in text or kind not in _TEXT_KINDS):
            value = tuple(listed(part) for part in text.split(","))
        elif kind == "int":
            value = int(text)
        elif kind == "float":
            value = float(text)
        elif kind == "bool":
            value = read_bool(text)
    except ValueError:
        kind = "a list of numbers" if listed is not None else _TEXT_KINDS[kind]
        raise _core.OptionError(f"{label} must be {kind}, not {text!r}") from None
    TranscribeOptions(**{name: value})  # the field's own check, its own message
    return value


def flagged() -> list[dataclasses.Field]:
    """The options the command line offers, in declaration order."""
    return [f for f in FIELDS if f.metadata["flag"] is not False]


def flag_name(f: dataclasses.Field) -> str:
    """An option's command-line flag: its declared spelling or ``--the-name``."""
    return f.metadata["flag"] or "--" + f.name.replace("_", "-")


def option_keywords(func):
    """Decorator for a function taking the options as ``**keywords`` (and
    maybe ``*args``, in the fields' order): ``inspect.signature`` and
    ``help()`` then show every option as a keyword with its default and
    type."""
    kinds = inspect.Parameter
    own = list(inspect.signature(func).parameters.values())
    positional = any(p.kind == kinds.VAR_POSITIONAL for p in own)
    kind = kinds.POSITIONAL_OR_KEYWORD if positional else kinds.KEYWORD_ONLY
    lead = [p for p in own if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    trail = [p for p in own if p.kind == kinds.KEYWORD_ONLY]
    fields = [kinds(f.name, kind, default=f.default, annotation=f.type) for f in FIELDS]
    func.__signature__ = inspect.Signature(lead + fields + trail)
    return func
