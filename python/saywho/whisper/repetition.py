"""The repetition guard: Whisper's loops cut back to a few copies.

A model that loses track of the audio tends to repeat itself: one phrase
over and over inside a segment ("the the the the ..."), or the same segment
again and again across windows ("Thank you." for minutes of music). The
temperature fallback catches some loops (their compression ratio is high);
the rest reach the transcript. With ``repetition_guard=N`` saywho keeps at
most N copies in a row:

- inside a segment, of any run of 1 to ``MAX_NGRAM`` tokens;
- across segments, of a segment's text (compared without case, punctuation
  and surrounding space).

Off by default (None): faster-whisper has no such guard, and a guard changes
transcripts that legitimately repeat: the test recording has four "Hello."
segments in a row, real conversation. Loops run to dozens of copies, so a
guard of 5 or more catches them and leaves speech alone.
"""

from __future__ import annotations

from ..eval.wer import normalize_words

MAX_NGRAM = 24


def cut_repeats(tokens: list[int], max_repeats: int, max_ngram: int = MAX_NGRAM) -> list[int]:
    """``tokens`` with every run of more than ``max_repeats`` copies of the
    same n-gram (n <= max_ngram) cut to ``max_repeats`` copies, first copies
    kept."""
    out: list[int] = []
    for token in tokens:
        out.append(token)
        for n in range(1, max_ngram + 1):
            span = n * (max_repeats + 1)
            if len(out) < span:
                break
            tail = out[-n:]
            if all(
                out[len(out) - n * (k + 1) : len(out) - n * k] == tail
                for k in range(1, max_repeats + 1)
            ):
                del out[-n:]  # one copy too many: the newest goes
                break
    return out


class SegmentRepeats:
    """Counts consecutive segments with the same words; ``keep`` says whether
    the next one still fits under the limit."""

    def __init__(self, max_repeats: int):
        self.max_repeats = max_repeats
        self.last: list[str] | None = None
        self.count = 0

    def keep(self, text: str) -> bool:
        words = normalize_words(text)
        if words and words == self.last:
            self.count += 1
        else:
            self.last, self.count = words, 1
        return self.count <= self.max_repeats
