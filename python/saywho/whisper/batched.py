"""Batched transcription, as faster-whisper's BatchedInferencePipeline does it.

Silero VAD finds the speech; the speech regions are packed, in order, into
chunks of at most 30 s (the gaps between regions dropped); the chunks are
encoded ``batch_size`` at a time and their windows decoded together
(one call to the core for the batch), each with the same prompt and no previous text;
each chunk's tokens become segments on the joined speech's clock, which
saywho.audio.speech.SpeechMap moves back to the recording's.

What differs from the sequential mode, as in faster-whisper: no temperature
fallback (only the first temperature; beams stay deterministic), no
condition_on_previous_text, no silence skipping and no hallucination guard;
a chunk is never longer than 30 s, so there is no seeking inside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .._internal.native import _core
from ..audio.decode import SAMPLE_RATE
from ..audio.speech import SpeechMap
from ..audio.vad import VadOptions, speech_sample_regions, vad_options
from .generate import GenerateOptions, compression_ratio, generate_windows
from .options import TranscribeOptions
from .repetition import SegmentRepeats, cut_repeats
from .segments import (
    MAX_LENGTH,
    N_FRAMES,
    Segment,
    TranscriptionInfo,
    audio_samples,
    pad_window,
    split_by_timestamps,
)
from .word_timing import add_word_timings

CHUNK_SECONDS = 30


@dataclass
class Chunk:
    """Speech regions (sample ranges of the recording) decoded as one window;
    ``offset`` is where the chunk starts on the joined speech's clock."""

    regions: list[tuple[int, int]]
    offset: float
    duration: float

    def samples(self, audio: np.ndarray) -> np.ndarray:
        return np.concatenate([audio[a:b] for a, b in self.regions]).astype(np.float32)


def pack_chunks(regions: Sequence[tuple[int, int]], max_seconds: float = CHUNK_SECONDS):
    """Regions in order, greedily packed into chunks of at most ``max_seconds``
    of speech; a region longer than that (VAD splits speech at 30 s, so only
    with other options) is a chunk of its own and will be cut at 30 s."""
    limit = max_seconds * SAMPLE_RATE
    chunks: list[Chunk] = []
    current: list[tuple[int, int]] = []
    length = joined = 0
    for a, b in regions:
        if current and length + (b - a) > limit:
            chunks.append(Chunk(current, joined / SAMPLE_RATE, length / SAMPLE_RATE))
            joined += length
            current, length = [], 0
        current.append((a, b))
        length += b - a
    if current:
        chunks.append(Chunk(current, joined / SAMPLE_RATE, length / SAMPLE_RATE))
    return chunks


def chunk_features(model, audio: np.ndarray, chunk: Chunk) -> np.ndarray:
    """The chunk's log-mel as faster-whisper makes it: one hop of zeros after
    the audio, the last frame dropped, zeros to 30 s."""
    return pad_window(model.log_mel(chunk.samples(audio))[:, :-1])


def chunk_languages(model, encoded, n_items: int) -> list[str]:
    """Each window's most likely language."""
    codes, logits = model.language_logits(encoded, n_items)
    return [codes[int(i)] for i in np.argmax(logits, axis=1)]


def decode_batch(
    model, features: np.ndarray, prompt: list[int], options: GenerateOptions, multilingual: bool
):
    """Encodes ``features`` [B, n_mels, 3000] and decodes the B windows
    together; one GenerationResult per window, the encoder output, and with
    ``multilingual`` each window's language (it is decoded in the language it
    sounds like), else None."""
    encoded = model.encode(features)
    n = features.shape[0]
    prompts = [list(prompt) for _ in range(n)]
    languages = None
    if multilingual:
        at = prompt.index(model.tokenizer.sot) + 1  # the language token
        languages = chunk_languages(model, encoded, n)
        for p, language in zip(prompts, languages):
            p[at] = model.tokenizer.languages[language]
    results = generate_windows(
        model,
        encoded,
        prompts,
        model.special,
        options,
        suppress_ids=model.config.get("suppress_ids", ()),
        suppress_ids_begin=model.config.get("suppress_ids_begin", ()),
    )
    return results, encoded, languages


def batched_segments(
    model,
    audio: np.ndarray,
    chunks: list[Chunk],
    prompt: list[int],
    options: GenerateOptions,
    batch_size: int,
    *,
    multilingual: bool,
    length_penalty: float,
    words: tuple[str, str] | None,
    language: str,
    task: str,
    progress=None,
    repetition_guard: int | None = None,
) -> Iterator[dict]:
    """Segments (dicts, on the joined speech's clock) of every chunk, in order."""
    repeats = SegmentRepeats(repetition_guard) if repetition_guard else None
    t = model.tokenizer
    total = sum(c.duration for c in chunks)
    done = 0.0
    last_speech = 0.0
    for first in range(0, len(chunks), batch_size):
        batch = chunks[first : first + batch_size]
        if progress is not None:
            progress("transcribe", done, total)
        features = np.stack([chunk_features(model, audio, c) for c in batch])
        results, encoded, languages = decode_batch(model, features, prompt, options, multilingual)
        for item, (chunk, result) in enumerate(zip(batch, results)):
            tokens = list(result.sequences_ids[0])
            # faster-whisper: CT2's length-normalised score back to a sum, over
            # the tokens plus the end token
            cum = result.scores[0] * (len(tokens) ** length_penalty)
            avg_logprob = cum / (len(tokens) + 1)
            size = int(math.ceil(chunk.duration) * 100)
            pieces, _, _ = split_by_timestamps(
                tokens, t.timestamp_begin, chunk.offset, size, chunk.duration, 0
            )
            if repetition_guard:
                for piece in pieces:
                    piece["tokens"] = cut_repeats(piece["tokens"], repetition_guard)
            if words is not None:
                # word timing reads the window from the batch's encoding
                # (a view, no copy), as faster-whisper's batched pipeline does
                last_speech = add_word_timings(
                    model, pieces, encoded, size, int(chunk.offset * 100), last_speech, language,
                    task, words, item,
                )  # fmt: skip
            for piece in pieces:
                text = t.decode(piece["tokens"])
                if repeats is not None and not repeats.keep(text):
                    continue  # one more copy of a looping segment
                yield {
                    "seek": int(chunk.offset * 100),
                    "start": round(piece["start"], 3),
                    "end": round(piece["end"], 3),
                    "text": text,
                    "tokens": piece["tokens"],
                    "avg_logprob": avg_logprob,
                    "compression_ratio": compression_ratio(text),
                    "no_speech_prob": result.no_speech_prob,
                    "words": piece.get("words") if words is not None else None,
                    "language": languages[item] if languages else None,
                }
            done += chunk.duration
    if progress is not None:
        progress("transcribe", total, total)


def _vad_options(vad_parameters):
    """faster-whisper's batched VAD settings: speech cut at 30 s, short pauses
    (160 ms) end a region; given settings keep their values but the 30 s."""
    if vad_parameters is None:
        return VadOptions(max_speech_duration_s=CHUNK_SECONDS, min_silence_duration_ms=160)
    if isinstance(vad_parameters, dict):
        given = {k: v for k, v in vad_parameters.items() if k != "max_speech_duration_s"}
        return vad_options({**given, "max_speech_duration_s": CHUNK_SECONDS})
    return vad_options(vad_parameters)


def _speech_chunks(model, samples, options: TranscribeOptions, name):
    """(chunks, SpeechMap or None, seconds of speech)."""
    if options.clip_timestamps is not None:
        regions = []
        for clip in options.clip_timestamps:
            a, b = int(clip["start"] * SAMPLE_RATE), int(clip["end"] * SAMPLE_RATE)
            if not 0 <= a < b:
                raise _core.OptionError(f"clip_timestamps: bad clip {clip!r}")
            regions.append((a, min(b, samples.size)))
        chunks = [Chunk([r], r[0] / SAMPLE_RATE, (r[1] - r[0]) / SAMPLE_RATE) for r in regions]
        return chunks, None, sum(b - a for a, b in regions) / SAMPLE_RATE
    if options.vad_filter:
        parameters = _vad_options(options.vad_parameters)
        regions = speech_sample_regions(samples, model.runtime, parameters)
    elif samples.size < CHUNK_SECONDS * SAMPLE_RATE:
        regions = [(0, samples.size)] if samples.size else []
    else:
        raise _core.OptionError(
            f"{name}: the batched mode cuts audio over {CHUNK_SECONDS} s at speech pauses: "
            "give vad_filter=True or clip_timestamps"
        )
    speech = SpeechMap(regions, in_samples=True)
    return pack_chunks(regions), speech, speech.joined_duration


def _detection_features(model, samples, chunks, segments: int) -> np.ndarray:
    """The chunks' log-mel, joined, for language detection (enough of it for
    ``segments`` windows), with faster-whisper's extra frame of -1.5."""
    parts, frames = [], 0
    for chunk in chunks:
        if frames >= segments * N_FRAMES:
            break
        mel = model.log_mel(chunk.samples(samples))[:, :-1]
        parts.append(mel)
        frames += mel.shape[1]
    parts.append(np.full((model.dims["n_mels"], 1), -1.5, dtype=np.float32))
    return np.concatenate(parts, axis=1)


def transcribe_batched(model, audio, options: TranscribeOptions, progress=None):
    """WhisperModel.transcribe(batch_size=...): see the module's docstring."""
    name = "audio" if isinstance(audio, np.ndarray) else str(audio)
    samples, duration = audio_samples(audio)
    chunks, speech, speech_seconds = _speech_chunks(model, samples, options, name)
    language, language_probability, all_language_probs = model.resolve_language(
        options,
        lambda: _detection_features(model, samples, chunks, options.language_detection_segments),
    )

    initial_prompt = options.initial_prompt
    if isinstance(initial_prompt, str):
        previous = model.tokenizer.encode(initial_prompt)
    else:
        previous = [int(x) for x in initial_prompt or ()]
    prompt = model.prompt_tokens(
        previous, language, options.task, options.without_timestamps, None, options.hotwords
    )
    max_new_tokens = options.max_new_tokens
    max_length = MAX_LENGTH if max_new_tokens is None else len(prompt) + max_new_tokens
    if max_length > MAX_LENGTH:
        raise _core.OptionError(
            f"the prompt ({len(prompt)} tokens) and max_new_tokens exceed {MAX_LENGTH} tokens"
        )
    # no temperature fallback here: the first temperature only
    decoding = model.decoding_options(options).replace(temperature=options.temperatures[:1])
    temperature = decoding.temperatures[0]
    search = GenerateOptions.from_options(
        decoding,
        beam_size=options.beam_size,
        patience=options.patience,
        max_length=max_length,
        sampling_temperature=temperature,
    )
    info = TranscriptionInfo(
        language=language,
        language_probability=language_probability,
        duration=duration,
        duration_after_vad=speech_seconds,
        all_language_probs=all_language_probs,
        options=decoding,
    )

    def segments() -> Iterator[Segment]:
        pieces = batched_segments(
            model, samples, chunks, prompt, search, options.batch_size,
            multilingual=options.multilingual and model.is_multilingual,
            length_penalty=options.length_penalty, words=options.punctuations,
            language=language, task=options.task, progress=progress,
            repetition_guard=options.repetition_guard,
        )  # fmt: skip
        for idx, piece in enumerate(pieces, 1):
            segment = Segment(id=idx, temperature=temperature, **piece)
            yield from speech.restore([segment]) if speech is not None else [segment]

    return segments(), info


class BatchedInferencePipeline:
    """faster-whisper's BatchedInferencePipeline over a saywho WhisperModel:
    ``transcribe`` with the batched mode's defaults (VAD on, no timestamp
    tokens, batches of 8)."""

    def __init__(self, model):
        self.model = model

    def transcribe(
        self,
        audio,
        language: str | None = None,
        task: str = "transcribe",
        beam_size: int = 5,
        batch_size: int = 8,
        without_timestamps: bool = True,
        vad_filter: bool = True,
        **options,
    ):
        return self.model.transcribe(
            audio,
            language=language,
            task=task,
            beam_size=beam_size,
            batch_size=batch_size,
            without_timestamps=without_timestamps,
            vad_filter=vad_filter,
            **options,
        )
