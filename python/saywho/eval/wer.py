"""Word error rate: (substitutions + deletions + insertions) / reference words.

Both texts are normalised the light way most Whisper comparisons use: lower
case, punctuation other than apostrophes inside words dropped, whitespace
collapsed. No spelling or number normalisation (Whisper's EnglishTextNormalizer
does more); say so when comparing with figures that used it.
"""

from __future__ import annotations

import re

import numpy as np

_NOT_WORD = re.compile(r"[^\w\s']+|(?<!\w)'|'(?!\w)")


def normalize_words(text: str) -> list[str]:
    return _NOT_WORD.sub(" ", text.lower()).split()


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance in words, number of reference words)."""
    ref, hyp = normalize_words(reference), normalize_words(hypothesis)
    row = np.arange(len(hyp) + 1)
    for i, word in enumerate(ref, 1):
        prev, row = row, np.empty_like(row)
        row[0] = i
        match = np.array([word != h for h in hyp], dtype=np.int64)
        # substitution or match, deletion; insertions need the running minimum
        row[1:] = np.minimum(prev[:-1] + match, prev[1:] + 1)
        for j in range(1, len(hyp) + 1):
            if row[j - 1] + 1 < row[j]:
                row[j] = row[j - 1] + 1
    return int(row[-1]), len(ref)


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER of hypothesis against reference; an empty reference gives 0 or inf."""
    errors, words = word_errors(reference, hypothesis)
    if words == 0:
        return 0.0 if errors == 0 else float("inf")
    return errors / words
