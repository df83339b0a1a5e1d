"""The sequential mode's seek loop: 30 s windows, moved on by timestamps.

faster-whisper's ``generate_segments``: each window is decoded with the
temperature fallback (saywho.whisper.generate.transcribe_window), cut at its
timestamp pairs into segments, and the next window starts where the last
complete segment ended; the text so far prompts the next window. With word
timestamps the window's words are timed (saywho.whisper.word_timing) and
``hallucination_silence_threshold`` may skip a silence around a likely
invented segment.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .clips import seek_clips
from .generate import should_skip_window, transcribe_window
from .options import TranscribeOptions
from .repetition import SegmentRepeats, cut_repeats
from .segments import N_FRAMES, TIME_PER_FRAME, Segment, pad_window, split_by_timestamps
from .word_timing import add_word_timings


def seek_segments(
    model,
    features: np.ndarray,
    language: str,
    options: TranscribeOptions,
    clips: Sequence[float] = (),
    progress=None,
) -> Iterator[Segment]:
    """The segments of ``features`` (the recording's log-mel plus one frame),
    decoded in ``language`` with ``options`` (their suppress_tokens already
    resolved for the model); ``clips`` are clip_timestamps' bounds in seconds."""
    t = model.tokenizer
    repetition_guard = options.repetition_guard
    repeats = SegmentRepeats(repetition_guard) if repetition_guard else None
    words = options.punctuations
    initial_prompt = options.initial_prompt
    multilingual = options.multilingual and model.is_multilingual
    task = options.task
    content_frames = features.shape[-1] - 1
    all_tokens: list[int] = []
    if initial_prompt is not None:
        if isinstance(initial_prompt, str):
            all_tokens.extend(t.encode(" " + initial_prompt.strip()))
        else:
            all_tokens.extend(int(x) for x in initial_prompt)
    prompt_reset_since = 0
    clips = seek_clips(list(clips), content_frames)
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
        encoder_output = model.encode(window)
        if multilingual:  # this window's language, kept for the next ones too
            language = model.detect_language(encoder_output)[0][0]
        prompt = model.prompt_tokens(
            all_tokens[prompt_reset_since:],
            language,
            task,
            options.without_timestamps,
            options.prefix if seek == 0 else None,
            options.hotwords,
        )
        result = transcribe_window(
            model,
            None,
            prompt,
            model.special,
            options,
            decode_text=t.decode,
            suppress_ids=model.config.get("suppress_ids", ()),
            suppress_ids_begin=model.config.get("suppress_ids_begin", ()),
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
            add_word_timings(
                model,
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
            if options.hallucination_silence_threshold is not None:
                skip_to = _skip_hallucination(
                    pieces,
                    options.hallucination_silence_threshold,
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
        if (
            not options.condition_on_previous_text
            or result.temperature > options.prompt_reset_on_temperature
        ):
            prompt_reset_since = len(all_tokens)
    if progress is not None:
        progress("transcribe", total, total)


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
