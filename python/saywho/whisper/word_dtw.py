"""Word timestamps: cross-attention of the alignment heads, then DTW.

The recipe is CTranslate2's ``Whisper.align`` followed by faster-whisper's
``find_alignment``, reproduced step by step so that the same weights give the
same word times:

1. run the decoder over ``sot_sequence + <|notimestamps|> + text + <|endoftext|>``
   keeping the cross-attention of the heads the checkpoint names;
2. softmax each row over the frames that hold audio (num_frames / 2);
3. standardise every frame over the token axis (all positions, eps 0);
4. median filter of width 7 along frames (reflected edges); mean over heads;
5. DTW on the negated rows from <|notimestamps|> to the last text token;
6. word boundaries from the tokenizer, a word's start/end at the DTW jumps,
   its probability the mean of its tokens' (softmax over text tokens only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._internal.native import _core

TOKENS_PER_SECOND = 50  # 100 mel frames per second, halved by the encoder's stride
MEDIAN_FILTER_WIDTH = 7


@dataclass
class WordTiming:
    word: str
    tokens: list[int]
    start: float
    end: float
    probability: float


def _attention_and_probs(model, encoder_output, start_sequence, text_tokens, heads, item=0):
    """Cross-attention rows of ``heads`` for every input position, and the
    probability of each text token under a softmax over text tokens; one
    call to the core (csrc/whisper/whisper_word_attention.c)."""
    special = model.special
    return _core.whisper_word_attention(
        model.core,
        encoder_output,
        list(start_sequence),
        list(text_tokens),
        np.asarray(heads, dtype=np.intc).reshape(-1, 2),
        eot=special.eot,
        no_timestamps=special.no_timestamps,
        item=item,
    )


def _median_filter(x: np.ndarray, width: int) -> np.ndarray:
    """Median along the last axis with reflected edges (the edge not repeated)."""
    rank = width // 2
    depth = x.shape[-1]
    if depth <= rank:
        return x.copy()
    padded = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(rank, rank)], mode="reflect")
    windows = np.lib.stride_tricks.sliding_window_view(padded, width, axis=-1)
    return np.median(windows, axis=-1).astype(np.float32)


def negative_dtw(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cheapest monotonic path through ``-matrix``: (text indices, time indices).

    Ties go to the horizontal step, as CTranslate2's DTW resolves them; costs
    accumulate in float32. In the core (csrc/whisper/whisper_dtw.c): a Python
    double loop over tokens x 1500 frames cost ~0.1 s a window.
    """
    return _core.negative_dtw(np.ascontiguousarray(matrix, dtype=np.float32))


def dtw_word_timings(
    model,
    encoder_output,
    start_sequence: list[int],
    text_tokens: list[int],
    num_frames: int,
    language: str,
    item: int = 0,
) -> list[WordTiming]:
    """Word timings of ``text_tokens`` in one window (times from its start):
    window ``item`` of ``encoder_output`` (a batch's, in the batched mode)."""
    if not text_tokens:
        return []
    heads = [tuple(h) for h in model.alignment_heads]
    attention, token_probs = _attention_and_probs(
        model, encoder_output, start_sequence, text_tokens, heads, item
    )
    frames = num_frames // 2
    words, word_tokens = model.tokenizer.split_to_word_tokens(
        list(text_tokens) + [model.special.eot], language
    )
    if frames == 0 or len(word_tokens) <= 1:
        return []
    scores = attention[:, :, :frames].astype(np.float32)
    scores = scores / scores.sum(axis=-1, keepdims=True, dtype=np.float32)
    mean = scores.mean(axis=1, keepdims=True, dtype=np.float32)
    var = np.maximum((scores * scores).mean(axis=1, keepdims=True) - mean * mean, 0.0)
    scores = (scores - mean) / np.sqrt(var, dtype=np.float32)
    scores = _median_filter(scores.astype(np.float32), MEDIAN_FILTER_WIDTH)
    weights = scores.mean(axis=0, dtype=np.float32)
    offset = len(start_sequence)
    matrix = weights[offset : offset + len(text_tokens) + 1]
    text_idx, time_idx = negative_dtw(matrix)

    boundaries = np.pad(np.cumsum([len(t) for t in word_tokens[:-1]]), (1, 0))
    jumps = np.pad(np.diff(text_idx), (1, 0), constant_values=1).astype(bool)
    jump_times = time_idx[jumps] / TOKENS_PER_SECOND
    starts = jump_times[boundaries[:-1]]
    ends = jump_times[boundaries[1:]]
    return [
        WordTiming(
            word=w,
            tokens=list(toks),
            start=float(s),
            end=float(e),
            probability=float(np.mean(token_probs[i:j])),
        )
        for w, toks, s, e, i, j in zip(
            words, word_tokens, starts, ends, boundaries[:-1], boundaries[1:]
        )
    ]


def merge_punctuations(words: list[WordTiming], prepended: str, appended: str) -> None:
    """Attach opening punctuation to the next word and closing to the previous."""
    i, j = len(words) - 2, len(words) - 1
    while i >= 0:
        before, after = words[i], words[j]
        if before.word.startswith(" ") and before.word.strip() in prepended:
            after.word = before.word + after.word
            after.tokens = before.tokens + after.tokens
            before.word, before.tokens = "", []
        else:
            j = i
        i -= 1
    i, j = 0, 1
    while j < len(words):
        before, after = words[i], words[j]
        if not before.word.endswith(" ") and after.word in appended:
            before.word = before.word + after.word
            before.tokens = before.tokens + after.tokens
            after.word, after.tokens = "", []
        else:
            i = j
        j += 1
