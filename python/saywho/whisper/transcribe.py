"""The Whisper model: its weights loaded into the core, and ``transcribe``.

The network runs in the C core (``_core.WhisperModel``); the choice of tokens
is :mod:`saywho.whisper.generate`. ``transcribe`` takes faster-whisper's
options (saywho.whisper.options.TranscribeOptions, declared once) and runs
the sequential mode (saywho.whisper.sequential: 30 s windows moved on by
timestamps, as faster-whisper's ``generate_segments``) or, with
``batch_size``, the batched mode (saywho.whisper.batched). Both share the
set-up here: the language, the prompt and the suppressed tokens.
Compute types are saywho.whisper.compute_types'.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from .._internal.device import open_runtime
from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..models.hub import default_model_name, is_auto, resolve_model
from ..models.whisper_weights import load_whisper, locate_checkpoint
from .batched import transcribe_batched
from .compute_types import check_compute_type_on, resolve_compute_type
from .generate import WhisperSpecialTokens
from .generate import suppressed_tokens as suppress_list
from .options import TranscribeOptions, option_keywords
from .segments import (
    MAX_LENGTH,
    N_FRAMES,
    Segment,
    TranscriptionInfo,
    pad_window,
)
from .sequential import transcribe_sequential
from .tokenizer import Tokenizer


class WhisperModel(RuntimeUser):
    """A Whisper checkpoint loaded into the core.

    ``path`` is a CTranslate2 or Hugging Face model directory, a model name
    ("tiny.en", "large-v3", ...) or a Hugging Face repo id, resolved by
    saywho.models.hub.resolve_model (``token`` for private repos); "auto" is
    large-v3-turbo on a GPU and small on the CPU. With a
    ``runtime`` the model shares that Runtime's pools (a Pipeline passes its
    own); without one it opens its own on ``device`` with ``cpu_threads``.
    ``compute_type`` takes faster-whisper's names (see resolve_compute_type).
    ``close()`` (or leaving a ``with`` block) returns the weights' memory.
    """

    _parts = ("core",)

    def __init__(
        self,
        path: str | os.PathLike,
        runtime: _core.Runtime | None = None,
        device: str = "auto",
        cpu_threads: int = 0,
        token: str | None = None,
        compute_type: str = "default",
    ):
        self.compute_type = resolve_compute_type(compute_type)
        # "auto" depends on the device, so it resolves once the runtime is
        # open; any other name fails here, before a GPU is touched
        auto = is_auto(path)
        if not auto:
            path = resolve_model(path, token=token)
        runtime = self._use_runtime(runtime, lambda: open_runtime(device, cpu_threads))
        with self._opening():
            if auto:
                path = resolve_model(default_model_name(runtime.device), token=token)
            self._load(path, runtime)

    def _load(self, path, runtime) -> None:
        self.core = None
        check_compute_type_on(self.compute_type, runtime)
        # the checkpoint's files are found once; the weights and the
        # tokenizer are read from what was found
        files = locate_checkpoint(path)
        weights = load_whisper(files)
        self.path = os.fspath(path)
        self.dims = dict(weights.dims if isinstance(weights.dims, dict) else vars(weights.dims))
        self.is_multilingual = bool(weights.is_multilingual)
        self.config = dict(weights.config or {})
        self.tokenizer = Tokenizer(files.tokenizer, multilingual=self.is_multilingual)
        self.alignment_heads = [tuple(h) for h in (weights.alignment_heads or [])]
        self.core = _core.WhisperModel(
            runtime, self.dims, weights.tensors, compute_type=self.compute_type
        )
        self.runtime = runtime
        t = self.tokenizer
        self.special = WhisperSpecialTokens(
            eot=t.eot,
            sot=t.sot,
            no_timestamps=t.no_timestamps,
            no_speech=t.no_speech,
            vocab_size=int(self.dims["n_vocab"]),
        )

    @property
    def mapped_bytes(self) -> int:
        """Bytes of the model file the CPU computes from where they lie (its
        float16 matrices, memory-mapped): not in the Runtime's pool, shared
        with the page cache, released by close()."""
        return self.core.mapped_bytes if getattr(self, "core", None) is not None else 0

    # -- the protocol saywho.whisper.generate decodes against --------------
    def encode(self, mel: np.ndarray):
        return self.core.encode(np.ascontiguousarray(mel, dtype=np.float32))

    def new_state(self, encoder_output, n_sequences: int):
        return self.core.new_state(encoder_output, n_sequences)

    # -- language ------------------------------------------------------------
    def detect_language(self, encoder_output) -> list[tuple[str, float]]:
        """Language probabilities from the logits after <|startoftranscript|>."""
        if not self.is_multilingual:
            raise _core.OptionError(f"{self.path}: an English-only model detects no language")
        codes, logits = self.language_logits(encoder_output, 1)
        probs = np.exp(logits[0] - logits[0].max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        return [(codes[i], float(probs[i])) for i in order]

    def language_logits(self, encoder_output, n_windows: int) -> tuple[list[str], np.ndarray]:
        """(language codes, logits [n_windows, languages]): the logits of each
        language token after <|startoftranscript|>, for each window."""
        codes = sorted(self.tokenizer.languages.items(), key=lambda kv: kv[1])
        ids = np.array([i for _, i in codes])
        state = self.new_state(encoder_output, n_windows)
        start = np.full((n_windows, 1), self.special.sot, dtype=np.int32)
        return [code for code, _ in codes], state.decode(start)[:, ids]

    def log_mel(self, samples: np.ndarray) -> np.ndarray:
        """faster-whisper's log-mel: over the samples plus one hop of zeros
        (the windows are padded with zeros in the log-mel domain later)."""
        return _core.log_mel_spectrogram(
            samples, n_mels=self.dims["n_mels"], padding=160, threads=self.runtime.threads
        )

    # -- transcription -------------------------------------------------------
    @option_keywords
    def transcribe(
        self, audio, *args, options: TranscribeOptions | None = None, progress=None, **keywords
    ) -> tuple[Iterator[Segment], TranscriptionInfo]:
        """faster-whisper's ``transcribe``: same option names, defaults and results.

        The options are saywho.whisper.options.TranscribeOptions' fields,
        given as keywords (or positionally, in faster-whisper's order), or
        whole as ``options=`` (keywords then change it).
        ``progress(stage, done, total)``, if given, is called with seconds of
        audio done before every window and once at the end.

        ``batch_size`` (an int >= 1) runs the batched mode instead: speech
        chunks of up to 30 s decoded ``batch_size`` at a time, as
        faster-whisper's BatchedInferencePipeline does (saywho.whisper.batched;
        VAD always cuts the audio there, ``vad_filter=False`` only when it is
        under 30 s or ``clip_timestamps`` are given).

        ``multilingual=True`` detects each window's (or chunk's) language and
        decodes it in that language; each segment's ``language`` says which.
        ``clip_timestamps`` are the stretches to transcribe, in seconds:
        "0,10.5,20,30" or [0, 10.5, 20, 30] (an odd count runs the last to the
        end), or {"start", "end"} dicts; given, they replace ``vad_filter``.
        ``hotwords`` is text put before the previous text in the prompt of
        every window that has no ``prefix`` (the first window, if given one).
        """
        options = TranscribeOptions.build(options, keywords, args)
        if options.batch_size is not None:
            return transcribe_batched(self, audio, options, progress)
        return transcribe_sequential(self, audio, options, progress)

    def resolve_language(self, options: TranscribeOptions, detection_features):
        """(language, probability, all probabilities or None): the one given,
        checked, or the one detected on ``detection_features()``."""
        language = options.language
        if language is None:
            if self.is_multilingual:
                return self._detect(
                    detection_features(),
                    options.language_detection_segments,
                    options.language_detection_threshold,
                )
            return "en", 1.0, None
        if not self.is_multilingual:
            return "en", 1.0, None
        if language not in self.tokenizer.languages:
            raise _core.OptionError(f"unknown language {language!r}")
        return language, 1.0, None

    def decoding_options(self, options: TranscribeOptions) -> TranscribeOptions:
        """``options`` with suppress_tokens resolved for this model's
        tokenizer: what both modes decode with and report in their info."""
        return options.replace(suppress_tokens=self.suppressed_tokens(options.suppress_tokens))

    def suppressed_tokens(self, suppress_tokens) -> tuple[int, ...]:
        """faster-whisper's suppress list for this model's tokenizer."""
        t = self.tokenizer
        return suppress_list(
            suppress_tokens,
            t.non_speech_tokens,
            [t.transcribe, t.translate, t.sot, t.sot_prev, t.sot_lm, t.no_speech],
        )

    def _detect(self, features, segments: int, threshold: float):
        features = features[:, : segments * N_FRAMES]
        votes: dict[str, list[float]] = {}
        probs: list[tuple[str, float]] = []
        for i in range(0, features.shape[-1], N_FRAMES):
            encoded = self.encode(pad_window(features[:, i : i + N_FRAMES]))
            probs = self.detect_language(encoded)
            language, probability = probs[0]
            if probability > threshold:
                return language, probability, probs
            votes.setdefault(language, []).append(probability)
        language = max(votes, key=lambda k: len(votes[k]))
        return language, max(votes[language]), probs

    def prompt_tokens(
        self, previous, language, task, without_timestamps, prefix, hotwords=None
    ) -> list[int]:
        """A window's prompt: the hotwords unless there is a prefix, the
        previous text (each up to half the context), the start-of-transcript
        sequence, and the prefix, as faster-whisper builds it."""
        t = self.tokenizer
        prompt: list[int] = []
        hints = []
        if hotwords and not prefix:
            hints = t.encode(" " + hotwords.strip())[: MAX_LENGTH // 2 - 1]
        if previous or hints:
            prompt.append(t.sot_prev)
            prompt.extend(hints)
            prompt.extend(previous[-(MAX_LENGTH // 2 - 1) :])
        prompt.extend(t.sot_sequence(language if self.is_multilingual else None, task))
        if without_timestamps:
            prompt.append(t.no_timestamps)
        if prefix:
            prefix_tokens = t.encode(" " + prefix.strip())[: MAX_LENGTH // 2 - 1]
            if not without_timestamps:
                prompt.append(t.timestamp_begin)
            prompt.extend(prefix_tokens)
        return prompt
