"""Word timestamps: each window's pieces get their words' times.

The words' times (the alignment heads' cross-attention through dynamic time
warping) come from saywho.whisper.word_dtw; this module applies faster-whisper's
rules on top: a median word length, sentence ends at most twice that,
punctuation merged into its word, and a piece's bounds moved to its words.
Both modes call it (saywho.whisper.seek_loop, saywho.whisper.batched).
"""

from __future__ import annotations

import numpy as np

from .segments import Word
from .word_dtw import dtw_word_timings, merge_punctuations


def add_word_timings(
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
    timings = dtw_word_timings(
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
