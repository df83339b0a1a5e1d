"""Long-form transcription: 30 s windows, seeking by timestamps, as faster-whisper.

The network runs in the C core (``_core.WhisperModel``); the choice of tokens
is :mod:`saywho.whisper.generate`. This module walks the recording window by
window the way faster-whisper's ``generate_segments`` does, so that the same
weights and options give the same segments.

``batch_size`` switches to the batched mode (saywho.whisper.batched);
BatchedInferencePipeline gives it faster-whisper's defaults.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import numpy as np

from ..audio import SAMPLE_RATE
from ..device import open_runtime
from ..models.hub import default_model_name, is_auto, resolve_model
from ..models.whisper_weights import load_whisper
from ..native import _core
from ..runtime_user import RuntimeUser
from ..speech import SpeechMap
from ..tokenizer import Tokenizer
from ..vad import SileroVad, default_model_path, get_speech_timestamps, vad_options
from .alignment import align_words, merge_punctuations
from .batched import transcribe_batched
from .clips import clip_seconds, detection_start, seek_clips
from .generate import (
    WhisperSpecialTokens,
    WindowOptions,
    should_skip_window,
    transcribe_window,
)
from .generate import (
    suppressed_tokens as suppress_list,
)
from .repetition import SegmentRepeats, check_guard, cut_repeats
from .segments import (
    MAX_LENGTH,
    N_FRAMES,
    TIME_PER_FRAME,
    Segment,
    TranscriptionInfo,
    Word,
    audio_samples,
    pad_window,
    split_by_timestamps,
    temperature_list,
)


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
        weights = load_whisper(path)
        self.path = os.fspath(path)
        self.dims = dict(weights.dims if isinstance(weights.dims, dict) else vars(weights.dims))
        self.is_multilingual = bool(weights.is_multilingual)
        self.config = dict(weights.config or {})
        self.tokenizer = Tokenizer(self.path, multilingual=self.is_multilingual)
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
        codes = sorted(self.tokenizer.languages.items(), key=lambda kv: kv[1])
        ids = np.array([i for _, i in codes])
        state = self.core.new_state(encoder_output, 1)
        logits = state.decode(np.array([[self.special.sot]], dtype=np.int32))[0, ids]
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-probs, kind="stable")
        return [(codes[i][0], float(probs[i])) for i in order]

    # -- transcription -------------------------------------------------------
    def transcribe(
        self,
        audio,
        language: str | None = None,
        task: str = "transcribe",
        beam_size: int = 5,
        best_of: int = 5,
        patience: float = 1.0,
        length_penalty: float = 1.0,
        repetition_penalty: float = 1.0,
        no_repeat_ngram_size: int = 0,
        temperature: float | Sequence[float] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
        compression_ratio_threshold: float | None = 2.4,
        log_prob_threshold: float | None = -1.0,
        no_speech_threshold: float | None = 0.6,
        condition_on_previous_text: bool = True,
        prompt_reset_on_temperature: float = 0.5,
        initial_prompt: str | Sequence[int] | None = None,
        prefix: str | None = None,
        suppress_blank: bool = True,
        suppress_tokens: Sequence[int] | None = (-1,),
        without_timestamps: bool = False,
        max_initial_timestamp: float = 1.0,
        max_new_tokens: int | None = None,
        word_timestamps: bool = False,
        hallucination_silence_threshold: float | None = None,
        prepend_punctuations: str = "\"'“¿([{-",
        append_punctuations: str = "\"'.。,，!！?？:：”)]}、",
        language_detection_threshold: float = 0.5,
        language_detection_segments: int = 1,
        seed: int = 0,
        vad_filter: bool = False,
        vad_parameters=None,
        progress=None,
        batch_size: int | None = None,
        multilingual: bool = False,
        clip_timestamps: str | Sequence[float] | Sequence[dict] | None = None,
        hotwords: str | None = None,
        repetition_guard: int | None = None,
    ) -> tuple[Iterator[Segment], TranscriptionInfo]:
        """faster-whisper's ``transcribe``: same option names, defaults and results.

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
        _check_options(task, beam_size, best_of, patience, language_detection_segments)
        check_guard(repetition_guard)
        if batch_size is not None:
            return transcribe_batched(
                self, audio, language=language, task=task, beam_size=beam_size,
                patience=patience, length_penalty=length_penalty,
                repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size,
                temperature=temperature, initial_prompt=initial_prompt,
                suppress_blank=suppress_blank, suppress_tokens=suppress_tokens,
                without_timestamps=without_timestamps, max_new_tokens=max_new_tokens,
                word_timestamps=word_timestamps, prepend_punctuations=prepend_punctuations,
                append_punctuations=append_punctuations, multilingual=multilingual,
                vad_filter=vad_filter, vad_parameters=vad_parameters,
                clip_timestamps=clip_timestamps, batch_size=batch_size, hotwords=hotwords,
                language_detection_threshold=language_detection_threshold,
                language_detection_segments=language_detection_segments, progress=progress,
                repetition_guard=repetition_guard,
            )  # fmt: skip
        clips = clip_seconds(clip_timestamps)
        samples, duration = audio_samples(audio)
        speech = None
        # as faster-whisper: clips given replace the VAD ("0" is its default)
        if vad_filter and (clip_timestamps is None or str(clip_timestamps) == "0"):
            # faster-whisper's vad_filter: Silero's speech regions, joined,
            # transcribed, and the timestamps moved back (saywho.vad)
            parameters = vad_options(vad_parameters)
            with SileroVad(default_model_path(), self.runtime) as vad:
                regions = get_speech_timestamps(samples, parameters, vad)
            speech = SpeechMap([(r["start"], r["end"]) for r in regions], in_samples=True)
            samples = speech.collect(samples)
            if samples.size == 0:  # no speech: nothing to transcribe, but info
                samples = np.zeros(SAMPLE_RATE // 10, dtype=np.float32)
        # faster-whisper computes the log-mel over the audio plus one hop of
        # zeros, then pads each window with zeros in the log-mel domain.
        features = _core.log_mel_spectrogram(
            samples, n_mels=self.dims["n_mels"], padding=160, threads=self.runtime.threads
        )

        content_frames = features.shape[-1] - 1
        language, language_probability, all_language_probs = self.resolve_language(
            language,
            lambda: features[:, detection_start(clips, content_frames) :],
            language_detection_segments,
            language_detection_threshold,
        )
        temperatures = temperature_list(temperature)
        resolved = self.suppressed_tokens(suppress_tokens)
        options = WindowOptions(
            beam_size=beam_size,
            best_of=best_of,
            patience=patience,
            length_penalty=length_penalty,
            repetition_penalty=repetition_penalty,
            no_repeat_ngram_size=no_repeat_ngram_size,
            temperatures=temperatures,
            compression_ratio_threshold=compression_ratio_threshold,
            log_prob_threshold=log_prob_threshold,
            no_speech_threshold=no_speech_threshold,
            suppress_blank=suppress_blank,
            suppress_tokens=resolved,
            max_initial_timestamp=max_initial_timestamp,
            max_new_tokens=max_new_tokens,
            seed=seed,
        )
        info = TranscriptionInfo(
            language=language,
            language_probability=language_probability,
            duration=duration,
            duration_after_vad=speech.joined_duration if speech else duration,
            all_language_probs=all_language_probs,
            options=options,
        )
        segments = self._segments(
            features,
            language,
            task,
            options,
            condition_on_previous_text=condition_on_previous_text,
            prompt_reset_on_temperature=prompt_reset_on_temperature,
            initial_prompt=initial_prompt,
            prefix=prefix,
            hotwords=hotwords,
            multilingual=multilingual and self.is_multilingual,
            clips=seek_clips(clips, content_frames),
            without_timestamps=without_timestamps,
            words=(prepend_punctuations, append_punctuations) if word_timestamps else None,
            hallucination_silence_threshold=hallucination_silence_threshold,
            progress=progress,
            repetition_guard=repetition_guard,
        )
        if speech is not None:
            # one at a time, as decoded: a caller streaming them hears each at once
            segments = _restored(segments, speech) if speech.samples else iter([])
        return segments, info

    def resolve_language(self, language, detection_features, segments: int, threshold: float):
        """(language, probability, all probabilities or None): the one given,
        checked, or the one detected on ``detection_features()``."""
        if language is None:
            if self.is_multilingual:
                return self._detect(detection_features(), segments, threshold)
            return "en", 1.0, None
        if not self.is_multilingual:
            return "en", 1.0, None
        if language not in self.tokenizer.languages:
            raise _core.OptionError(f"unknown language {language!r}")
        return language, 1.0, None

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

    def add_words(
        self, pieces, encoder_output, num_frames, seek, last_speech, language, task, punct, item=0
    ):
        """Word timings for one window's pieces (window ``item`` of a batch's
        encoder output); returns the last speech time, as faster-whisper does."""
        return _add_words_to_pieces(
            self, pieces, encoder_output, num_frames, seek, last_speech, language, task, punct, item
        )

    def _segments(
        self,
        features: np.ndarray,
        language: str,
        task: str,
        options: WindowOptions,
        *,
        condition_on_previous_text: bool,
        prompt_reset_on_temperature: float,
        initial_prompt,
        prefix: str | None,
        without_timestamps: bool,
        words: tuple[str, str] | None,
        hotwords: str | None = None,
        multilingual: bool = False,
        clips: Sequence[tuple[int, int]] | None = None,
        hallucination_silence_threshold: float | None = None,
        progress=None,
        repetition_guard: int | None = None,
    ) -> Iterator[Segment]:
        t = self.tokenizer
        repeats = SegmentRepeats(repetition_guard) if repetition_guard else None
        content_frames = features.shape[-1] - 1
        all_tokens: list[int] = []
        if initial_prompt is not None:
            if isinstance(initial_prompt, str):
                all_tokens.extend(t.encode(" " + initial_prompt.strip()))
            else:
                all_tokens.extend(int(x) for x in initial_prompt)
        prompt_reset_since = 0
        clips = clips or [(0, content_frames)]
        idx, clip = 0, 0
        seek = clips[0][0]
        last_speech_timestamp = 0.0
        rng = np.random.default_rng(options.seed)
        total = content_frames * TIME_PER_FRAME
        # the seek loop walks each clip in turn (faster-whisper's order: a
        # clip starting before the seek starts at the seek)
        while clip < len(clips):
            clip_start, clip_end = clips[clip][0], min(clips[clip][1], content_frames)
            seek = max(seek, clip_start)
            if seek >= clip_end:
                clip += 1
                if clip < len(clips):
                    seek = clips[clip][0]
                continue
            if progress is not None:
                progress("transcribe", seek * TIME_PER_FRAME, total)
            time_offset = seek * TIME_PER_FRAME
            segment_size = min(N_FRAMES, content_frames - seek, clip_end - seek)
            segment_duration = segment_size * TIME_PER_FRAME
            window = pad_window(features[:, seek : seek + segment_size])
            encoder_output = self.encode(window)
            if multilingual:  # this window's language, kept for the next ones too
                language = self.detect_language(encoder_output)[0][0]
            prompt = self.prompt_tokens(
                all_tokens[prompt_reset_since:],
                language,
                task,
                without_timestamps,
                prefix if seek == 0 else None,
                hotwords,
            )
            result = transcribe_window(
                self,
                None,
                prompt,
                self.special,
                options,
                decode_text=t.decode,
                suppress_ids=self.config.get("suppress_ids", ()),
                suppress_ids_begin=self.config.get("suppress_ids_begin", ()),
                rng=rng,
                encoder_output=encoder_output,
            )
            if should_skip_window(result, options):
                seek += segment_size
                continue
            previous_seek = seek
            pieces, seek, single_ending = split_by_timestamps(
                result.tokens, t.timestamp_begin, time_offset, segment_size, segment_duration, seek
            )
            if repetition_guard:
                for piece in pieces:
                    piece["tokens"] = cut_repeats(piece["tokens"], repetition_guard)
            if words is not None:
                self.add_words(
                    pieces,
                    encoder_output,
                    segment_size,
                    previous_seek,
                    last_speech_timestamp,
                    language,
                    task,
                    words,
                )
                if not single_ending:
                    last_end = _last_end(pieces)
                    if last_end is not None and last_end > time_offset:
                        seek = round(last_end * 100)
                if hallucination_silence_threshold is not None:
                    skip_to = _skip_hallucination(
                        pieces,
                        hallucination_silence_threshold,
                        time_offset,
                        previous_seek,
                        segment_duration,
                        last_speech_timestamp,
                        content_frames,
                    )
                    if skip_to is not None and skip_to[1]:
                        seek = skip_to[0]  # a hallucinated start: decode again after the gap
                        continue
                    if skip_to is not None:
                        seek = skip_to[0]
                last_end = _last_end(pieces)
                if last_end is not None:
                    last_speech_timestamp = last_end
            for piece in pieces:
                text = t.decode(piece["tokens"])
                if piece["start"] == piece["end"] or not text.strip():
                    continue
                if repeats is not None and not repeats.keep(text):
                    continue  # one more copy of a looping segment
                all_tokens.extend(piece["tokens"])
                idx += 1
                yield Segment(
                    id=idx,
                    seek=previous_seek,
                    start=piece["start"],
                    end=piece["end"],
                    text=text,
                    tokens=piece["tokens"],
                    avg_logprob=result.avg_logprob,
                    compression_ratio=result.compression_ratio,
                    no_speech_prob=result.no_speech_prob,
                    temperature=result.temperature,
                    words=piece.get("words") if words is not None else None,
                    language=language if multilingual else None,
                )
            if not condition_on_previous_text or result.temperature > prompt_reset_on_temperature:
                prompt_reset_since = len(all_tokens)
        if progress is not None:
            progress("transcribe", total, total)


def _add_words_to_pieces(
    model,
    pieces,
    encoder_output,
    num_frames,
    seek,
    last_speech_timestamp,
    language,
    task,
    punctuation,
    item=0,
):
    """faster-whisper's add_word_timestamps for one window's pieces."""
    tokenizer = model.tokenizer
    per_piece = [[tok for tok in p["tokens"] if tok < tokenizer.eot] for p in pieces]
    text_tokens = [tok for toks in per_piece for tok in toks]
    start_sequence = tokenizer.sot_sequence(language if model.is_multilingual else None, task)
    timings = align_words(
        model, encoder_output, start_sequence, text_tokens, num_frames, language, item
    )
    durations = np.array([w.end - w.start for w in timings])
    durations = durations[durations.nonzero()]
    median = min(0.7, float(np.median(durations))) if len(durations) else 0.0
    longest = median * 2
    if len(durations):
        # words at sentence ends are at most twice the median long
        marks = ".。!！?？"
        for i in range(1, len(timings)):
            if timings[i].end - timings[i].start > longest:
                if timings[i].word in marks:
                    timings[i].end = timings[i].start + longest
                elif timings[i - 1].word in marks:
                    timings[i].start = timings[i].end - longest
    merge_punctuations(timings, *punctuation)

    offset = seek / 100
    k = 0
    for piece, toks in zip(pieces, per_piece):
        saved, words = 0, []
        while k < len(timings) and saved < len(toks):
            w = timings[k]
            if w.word:
                words.append(
                    Word(
                        start=round(offset + w.start, 2),
                        end=round(offset + w.end, 2),
                        word=w.word,
                        probability=w.probability,
                    )
                )
            saved += len(w.tokens)
            k += 1
        if words:
            # the first words after a pause are no longer than the median allows
            if words[0].end - last_speech_timestamp > median * 4 and (
                words[0].end - words[0].start > longest
                or (len(words) > 1 and words[1].end - words[0].start > longest * 2)
            ):
                if len(words) > 1 and words[1].end - words[1].start > longest:
                    boundary = max(words[1].end / 2, words[1].end - longest)
                    words[0].end = words[1].start = boundary
                words[0].start = max(0, words[0].end - longest)
            # a first or last word much longer than its piece yields to the piece
            if piece["start"] < words[0].end and piece["start"] - 0.5 > words[0].start:
                words[0].start = max(0, min(words[0].end - median, piece["start"]))
            else:
                piece["start"] = words[0].start
            if piece["end"] > words[-1].start and piece["end"] + 0.5 < words[-1].end:
                words[-1].end = max(words[-1].start + median, piece["end"])
            else:
                piece["end"] = words[-1].end
            last_speech_timestamp = piece["end"]
        piece["words"] = words
    return last_speech_timestamp


def _last_end(pieces) -> float | None:
    """The last word's end, else the last piece's end (faster-whisper's get_end)."""
    for piece in reversed(pieces):
        if piece.get("words"):
            return piece["words"][-1].end
    return pieces[-1]["end"] if pieces else None


_PUNCTUATION = "\"'“¿([{-\"'.。,，!！?？:：”)]}、"


def _anomaly(piece) -> bool:
    """Words that are very short, very long or improbable: likely invented."""
    if piece is None or not piece["words"]:
        return False
    words = [w for w in piece["words"] if w.word not in _PUNCTUATION][:8]
    score = 0.0
    for w in words:
        duration = w.end - w.start
        score += 1.0 if w.probability < 0.15 else 0.0
        score += (0.133 - duration) * 15 if duration < 0.133 else 0.0
        score += duration - 2.0 if duration > 2.0 else 0.0
    return score >= 3 or score + 0.01 >= len(words)


def _skip_hallucination(
    pieces, threshold, time_offset, previous_seek, window_duration, last_speech, content_frames
):
    """faster-whisper's hallucination_silence_threshold.

    Returns None, (seek, True) to decode again from after a silent gap before a
    suspicious first piece, or (seek, False) with ``pieces`` cut before a
    suspicious piece that silence surrounds.
    """
    first = next((p for p in pieces if p["words"]), None)
    if first is not None and _anomaly(first):
        gap = first["start"] - time_offset
        if gap > threshold:
            return previous_seek + round(gap * 100), True
    window_end = (previous_seek + N_FRAMES) * TIME_PER_FRAME
    content_duration = content_frames * TIME_PER_FRAME
    last_end = last_speech
    for i, piece in enumerate(pieces):
        if not piece["words"]:
            continue
        if _anomaly(piece):
            following = next((p for p in pieces[i + 1 :] if p["words"]), None)
            next_start = (
                following["words"][0].start
                if following is not None
                else time_offset + window_duration
            )
            silence_before = (
                piece["start"] - last_end > threshold
                or piece["start"] < threshold
                or piece["start"] - time_offset < 2.0
            )
            silence_after = (
                next_start - piece["end"] > threshold
                or _anomaly(following)
                or window_end - piece["end"] < 2.0
            )
            if silence_before and silence_after:
                seek = round(max(time_offset + 1, piece["start"]) * 100)
                if content_duration - piece["end"] < threshold:
                    seek = content_frames
                del pieces[i:]
                return seek, False
        last_end = piece["end"]
    return None


COMPUTE_TYPES = (
    "default",
    "auto",
    "float32",
    "int8",
    "int8_float32",
    "float16",
    "bfloat16",
    "int8_float16",
)
# the half-precision computes (docs/half_precision.md); bfloat16 runs on the
# CPU too (docs/amx.md: AMX-BF16 tiles where the CPU has them)
GPU_COMPUTE_TYPES = ("float16", "bfloat16", "int8_float16")
CPU_COMPUTE_TYPES = ("float32", "int8", "bfloat16")
_NOT_BUILT = ("int8_bfloat16", "int16")


def resolve_compute_type(compute_type: str) -> str:
    """faster-whisper's compute_type names, mapped to what the core computes.

    "default" keeps float32 (the readers widen float16 checkpoints, as
    CTranslate2 does on a CPU); "auto" picks the fastest on a CPU, int8;
    "int8" and "int8_float32" quantize the linear layers' weights per row.
    "float16", "bfloat16" and "int8_float16" are the GPU's: weight matrices in
    half precision, products on tensor cores with float32 sums (see
    check_compute_type_on for the device check). "bfloat16" runs on the CPU
    too: the linear layers' weights in bfloat16, activations rounded to it
    on each product, float32 sums (AMX-BF16 tiles where the CPU has them).
    Names not built are an OptionError, not a silent float32.
    """
    if compute_type in ("default", "float32"):
        return "float32"
    if compute_type in ("auto", "int8", "int8_float32"):
        return "int8"
    if compute_type in GPU_COMPUTE_TYPES:
        return compute_type
    if compute_type in _NOT_BUILT:
        raise _core.OptionError(
            f"compute_type {compute_type!r} is not built in saywho yet; "
            "use 'float32' or 'int8' (or 'default', 'auto')"
        )
    raise _core.OptionError(
        f"unknown compute_type {compute_type!r}; expected one of {', '.join(COMPUTE_TYPES)}"
    )


def check_compute_type_on(compute_type: str, runtime) -> None:
    """float16 and int8_float16 are the CUDA backend's: on the CPU they are an
    OptionError (CTranslate2's CPU build refuses float16 compute too), never
    a silent float32. bfloat16 runs on both."""
    if compute_type not in CPU_COMPUTE_TYPES and runtime.device != "cuda":
        raise _core.OptionError(
            f"compute_type {compute_type!r} needs a GPU: the {runtime.device} backend computes "
            "float32, int8 and bfloat16; use compute_type='float32' or 'int8' (or 'bfloat16', "
            "'default', 'auto'), or device='cuda'"
        )


def _check_options(task, beam_size, best_of, patience, detection_segments) -> None:
    if task not in ("transcribe", "translate"):
        raise _core.OptionError(f"task must be 'transcribe' or 'translate', not {task!r}")
    if not isinstance(beam_size, int) or beam_size < 1:
        raise _core.OptionError(f"beam_size must be an int >= 1, not {beam_size!r}")
    if not isinstance(best_of, int) or best_of < 1:
        raise _core.OptionError(f"best_of must be an int >= 1, not {best_of!r}")
    if not patience > 0:
        raise _core.OptionError(f"patience must be > 0, not {patience!r}")
    if detection_segments < 1:
        raise _core.OptionError("language_detection_segments must be >= 1")


def _restored(segments, speech):
    """Segments of the VAD-joined audio back on the recording's clock, each
    as soon as it is decoded."""
    for segment in segments:
        yield from speech.restore([segment])
