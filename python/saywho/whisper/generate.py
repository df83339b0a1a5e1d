"""One 30-second window: CT2's ``WhisperReplica::generate`` and faster-whisper's
``generate_with_fallback`` on top of it.

``generate`` takes a prompt of token ids (previous text, the start-of-transcript
sequence, maybe ``<|notimestamps|>`` and a prefix) and returns the best
hypotheses with CT2's scores and the no-speech probability.
``transcribe_window`` adds faster-whisper's temperature fallback and the
numbers a segment carries (average log-probability, compression ratio).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import numpy as np

from .._internal.native import _core
from .options import NAMES as OPTION_NAMES
from .options import TranscribeOptions

# faster-whisper's fixed numbers
MAX_LENGTH = 448
TIME_PRECISION = 0.02


@dataclass(frozen=True)
class WhisperSpecialTokens:
    """Ids of the tokens the decoding rules refer to.

    Whisper's vocabulary ends with: text tokens, ``<|endoftext|>``,
    ``<|startoftranscript|>``, languages, ``<|translate|>``, ``<|transcribe|>``,
    ``<|startoflm|>``, ``<|startofprev|>``, ``<|nospeech|>``,
    ``<|notimestamps|>``, then the timestamps up to the last id.
    """

    eot: int
    sot: int
    no_timestamps: int
    no_speech: int
    vocab_size: int

    @property
    def timestamp_begin(self) -> int:
        return self.no_timestamps + 1

    @property
    def timestamp_end(self) -> int:
        return self.vocab_size - 1


@dataclass
class GenerateOptions:
    """CT2's ``WhisperOptions``, same names and defaults: what one call into
    the core searches with. Its fields are _core.whisper_generate's keywords
    (tests/test_options_declared_once.py holds the C list to them); those
    named as TranscribeOptions' fields mean the same, the others
    (``SEARCH_ONLY``) are set by the decoding from the options.
    """

    beam_size: int = 5
    patience: float = 1.0
    length_penalty: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    max_length: int = MAX_LENGTH
    sampling_topk: int = 1
    sampling_temperature: float = 1.0
    num_hypotheses: int = 1
    return_scores: bool = False
    return_no_speech_prob: bool = False
    max_initial_timestamp_index: int = 50
    suppress_blank: bool = True
    suppress_tokens: Sequence[int] = (-1,)

    @classmethod
    def from_options(cls, options: TranscribeOptions, **search) -> GenerateOptions:
        """The options ``options`` decides (those of the same name; the
        search's own, beam_size and patience, are the caller's to give, as a
        temperature above 0 samples instead), with scores, the no-speech
        probability and ``search`` on top."""
        shared = {n: getattr(options, n) for n in _FROM_OPTIONS}
        shared["suppress_tokens"] = tuple(options.suppress_tokens or ())
        return cls(return_scores=True, return_no_speech_prob=True, **{**shared, **search})


# GenerateOptions' fields no TranscribeOptions field of the same name sets
SEARCH_ONLY = tuple(f.name for f in fields(GenerateOptions) if f.name not in OPTION_NAMES)
_FROM_OPTIONS = tuple(
    f.name
    for f in fields(GenerateOptions)
    if f.name in OPTION_NAMES and f.name not in ("beam_size", "patience")
)


@dataclass
class GenerationResult:
    """CT2's ``WhisperGenerationResult`` (ids only)."""

    sequences_ids: list[list[int]]
    scores: list[float]
    no_speech_prob: float = 0.0
    steps: int = 0  # decoder steps the core's call ran (lockstep over its windows)


def generate_windows(
    model: Any,
    encoder_output: Any,
    prompts: Sequence[Sequence[int]],
    special: WhisperSpecialTokens,
    options: GenerateOptions | None = None,
    *,
    suppress_ids: Sequence[int] = (),
    suppress_ids_begin: Sequence[int] = (),
    rng: np.random.Generator | None = None,
) -> list[GenerationResult]:
    """Decode the windows of ``encoder_output``, one prompt each, in one call
    to the core (``_core.whisper_generate``: CT2's ``WhisperReplica::generate``
    for a batch). The prompts must have the same layout (they differ at most
    in the language token).

    ``suppress_ids`` and ``suppress_ids_begin`` are the model config's lists
    (CT2's ``config.json``): ``-1`` in ``suppress_tokens`` stands for the
    first, ``suppress_blank`` turns on the second. At a temperature, the
    core's generator is seeded from ``rng``.
    """
    options = options or GenerateOptions()
    core = getattr(model, "core", model)
    seed = 0
    if options.beam_size == 1 and options.sampling_topk != 1 and options.sampling_temperature != 0:
        seed = int((rng if rng is not None else np.random.default_rng(0)).integers(2**63))
    found = _core.whisper_generate(
        core,
        encoder_output,
        np.asarray(prompts, dtype=np.int32).reshape(len(prompts), -1),
        eot=special.eot,
        sot=special.sot,
        no_timestamps=special.no_timestamps,
        no_speech=special.no_speech,
        n_vocab=special.vocab_size,
        **{**asdict(options), "suppress_tokens": tuple(options.suppress_tokens)},
        suppress_ids=tuple(suppress_ids),
        suppress_ids_begin=tuple(suppress_ids_begin),
        seed=seed,
    )
    return [
        GenerationResult(
            sequences_ids=hyps,
            scores=scores if options.return_scores else [],
            no_speech_prob=no_speech,
            steps=steps,
        )
        for hyps, scores, no_speech, steps in found
    ]


def generate(
    model: Any,
    encoder_output: Any,
    prompt: Sequence[int],
    special: WhisperSpecialTokens,
    options: GenerateOptions | None = None,
    *,
    suppress_ids: Sequence[int] = (),
    suppress_ids_begin: Sequence[int] = (),
    rng: np.random.Generator | None = None,
) -> GenerationResult:
    """Decode one window for one prompt (see :func:`generate_windows`)."""
    return generate_windows(
        model,
        encoder_output,
        [list(prompt)],
        special,
        options,
        suppress_ids=suppress_ids,
        suppress_ids_begin=suppress_ids_begin,
        rng=rng,
    )[0]


# --- faster-whisper's layer ----------------------------------------------------------


def compression_ratio(text: str) -> float:
    """UTF-8 length over zlib-compressed length (default level), as faster-whisper."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data))


def suppressed_tokens(
    suppress_tokens: Sequence[int] | None,
    non_speech_tokens: Sequence[int],
    special_ids: Sequence[int],
) -> tuple[int, ...]:
    """faster-whisper's ``get_suppressed_tokens``.

    ``special_ids`` are transcribe, translate, sot, sot_prev, sot_lm and
    no_speech. ``None`` or empty is returned unchanged, as faster-whisper's
    caller does (``get_suppressed_tokens(...) if suppress_tokens else ...``).
    """
    if not suppress_tokens:
        return tuple(suppress_tokens or ())
    tokens = list(suppress_tokens)
    if -1 in tokens:
        tokens = [t for t in tokens if t >= 0]
        tokens.extend(non_speech_tokens)
    tokens.extend(special_ids)
    return tuple(sorted(set(tokens)))


# the old name of the per-window options: faster-whisper's
# ``TranscriptionOptions`` are the transcription's options
WindowOptions = TranscribeOptions


@dataclass
class WindowResult:
    """The decode faster-whisper keeps for a window, and how it was judged."""

    tokens: list[int]
    avg_logprob: float
    no_speech_prob: float
    temperature: float
    compression_ratio: float
    text: str = ""
    score: float = 0.0
    attempts: list[WindowResult] = field(default_factory=list, repr=False)


def transcribe_window(
    model: Any,
    mel_window: np.ndarray | None,
    prompt: Sequence[int],
    special: WhisperSpecialTokens,
    options: TranscribeOptions | None = None,
    *,
    decode_text: Callable[[list[int]], str],
    suppress_ids: Sequence[int] = (),
    suppress_ids_begin: Sequence[int] = (),
    encoder_output: Any = None,
    rng: np.random.Generator | None = None,
) -> WindowResult:
    """Encode one 30 s mel window and decode it with temperature fallback.

    Mirrors faster-whisper 1.2's ``generate_with_fallback``. ``decode_text``
    turns ids into text the way faster-whisper's ``Tokenizer.decode`` does
    (ids >= eot dropped); its stripped result gives the compression ratio.
    Pass ``encoder_output`` instead of ``mel_window`` to reuse an encoding.
    ``options`` are the transcription's, their ``suppress_tokens`` the
    resolved list (see :func:`suppressed_tokens`); ``seed`` seeds sampling
    at temperatures above 0.
    """
    options = options or TranscribeOptions()
    prompt = [int(t) for t in prompt]
    if encoder_output is None:
        if mel_window is None:
            raise ValueError("give mel_window or encoder_output")
        encoder_output = model.encode(np.ascontiguousarray(mel_window, dtype=np.float32))
    if rng is None:
        rng = np.random.default_rng(options.seed)

    max_initial_timestamp_index = int(round(options.max_initial_timestamp / TIME_PRECISION))
    if options.max_new_tokens is not None:
        max_length = len(prompt) + options.max_new_tokens
    else:
        max_length = MAX_LENGTH
    if max_length > MAX_LENGTH:
        raise ValueError(
            f"prompt ({len(prompt)} tokens) plus max_new_tokens exceeds {MAX_LENGTH} tokens"
        )

    all_results: list[WindowResult] = []
    below_cr_threshold: list[WindowResult] = []
    chosen: WindowResult | None = None
    temperature = 0.0
    for temperature in options.temperatures:
        if temperature > 0:
            gen = GenerateOptions.from_options(
                options,
                max_length=max_length,
                max_initial_timestamp_index=max_initial_timestamp_index,
                beam_size=1,
                num_hypotheses=options.best_of,
                sampling_topk=0,
                sampling_temperature=temperature,
            )
        else:
            gen = GenerateOptions.from_options(
                options,
                max_length=max_length,
                max_initial_timestamp_index=max_initial_timestamp_index,
                beam_size=options.beam_size,
                patience=options.patience,
            )
        result = generate(
            model,
            encoder_output,
            prompt,
            special,
            gen,
            suppress_ids=suppress_ids,
            suppress_ids_begin=suppress_ids_begin,
            rng=rng,
        )
        tokens = list(result.sequences_ids[0])
        seq_len = len(tokens)
        # faster-whisper undoes CT2's length normalisation, then divides by
        # the token count plus one (the end token's log-prob is in the sum).
        cum_logprob = result.scores[0] * (seq_len**options.length_penalty)
        avg_logprob = cum_logprob / (seq_len + 1)
        text = decode_text(tokens).strip()
        ratio = compression_ratio(text)
        attempt = WindowResult(
            tokens=tokens,
            avg_logprob=avg_logprob,
            no_speech_prob=result.no_speech_prob,
            temperature=temperature,
            compression_ratio=ratio,
            text=text,
            score=result.scores[0],
        )
        all_results.append(attempt)

        needs_fallback = False
        if options.compression_ratio_threshold is not None:
            if ratio > options.compression_ratio_threshold:
                needs_fallback = True
            else:
                below_cr_threshold.append(attempt)
        if options.log_prob_threshold is not None and avg_logprob < options.log_prob_threshold:
            needs_fallback = True
        if (
            options.no_speech_threshold is not None
            and result.no_speech_prob > options.no_speech_threshold
            and options.log_prob_threshold is not None
            and avg_logprob < options.log_prob_threshold
        ):
            needs_fallback = False  # silence: keep it, the caller skips it
        if not needs_fallback:
            chosen = attempt
            break
    else:
        best = max(below_cr_threshold or all_results, key=lambda r: r.avg_logprob)
        chosen = WindowResult(
            tokens=best.tokens,
            avg_logprob=best.avg_logprob,
            no_speech_prob=best.no_speech_prob,
            temperature=temperature,
            compression_ratio=best.compression_ratio,
            text=best.text,
            score=best.score,
        )
    assert chosen is not None
    chosen.attempts = all_results
    return chosen


def should_skip_window(result: WindowResult, options: TranscribeOptions) -> bool:
    """faster-whisper's silence test for a decoded window."""
    if options.no_speech_threshold is None:
        return False
    skip = result.no_speech_prob > options.no_speech_threshold
    if options.log_prob_threshold is not None and result.avg_logprob > options.log_prob_threshold:
        skip = False
    return skip
