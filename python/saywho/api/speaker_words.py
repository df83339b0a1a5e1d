"""Who said each word: words and segments meet speaker turns.

A word (or any span with ``start`` and ``end``) gets the speaker whose turns
overlap it the most, summed per speaker; when that speaker covers less than
``threshold`` of the word (default 0.5) the word is ``UNKNOWN``. Exact ties
go to the speaker whose overlapping turn starts first, then to the label that
sorts first. A word of zero duration takes the turn that contains its
instant, else the nearest turn at most ``tolerance`` seconds away (0.1 s,
five of Whisper's 20 ms timestamp steps), else ``UNKNOWN``.

The work happens in the C core (``sw_align_spans``) by sorting and one sweep,
O((W + T) log(W + T)) for words that do not overlap one another, instead of
a Python loop over every word and turn. See docs/alignment.md.

Pass exclusive turns (one speaker at a time, :func:`exclusive_turns`) for
the rule above; with overlapping turns every speaker's own overlap counts.

With ``fill_nearest`` (what :func:`align_segments` and ``Pipeline.process``
do by default, as WhisperX's option of that name) no word is left
``UNKNOWN`` while there is a turn at all: a word below the threshold takes
the speaker that covers most of it, and a word that falls between turns the
speaker of the nearest turn.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .._internal.native import _core
from ..formats.rttm import Turn

UNKNOWN = "UNKNOWN"
# the share of a word's (or segment's) duration a speaker's turns must cover
# for that speaker to get it
WORD_COVERAGE_THRESHOLD = 0.5
DEFAULT_TOLERANCE = 0.1
# the shortest change of speaker inside a segment: the diarization's floor on
# turns (saywho.diarization.diarize.MIN_DURATION_ON)
MIN_PIECE = 0.2


class Span(Protocol):
    start: float
    end: float


class WordLike(Protocol):
    start: float
    end: float
    word: str
    probability: float


class TurnLike(Protocol):
    start: float
    end: float
    speaker: str


@dataclass
class SpeakerWord:
    """A word with its time, the model's confidence and its speaker."""

    start: float
    end: float
    word: str
    probability: float
    speaker: str | None = None


@dataclass
class SpeakerSegment:
    """Consecutive words of one speaker (or a wordless segment)."""

    start: float
    end: float
    text: str
    speaker: str | None = None
    words: list[SpeakerWord] = field(default_factory=list)
    # the language Whisper decoded it in, with multilingual=True; else None
    language: str | None = None


def _times(spans: Sequence, what: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        starts = np.fromiter((s.start for s in spans), dtype=np.float64, count=len(spans))
        ends = np.fromiter((s.end for s in spans), dtype=np.float64, count=len(spans))
    except (TypeError, ValueError) as e:
        raise _core.OptionError(f"{what}: start and end must be numbers ({e})") from None
    return starts, ends


def speaker_coverage(
    spans: Sequence[Span],
    turns: Sequence[TurnLike],
    threshold: float = WORD_COVERAGE_THRESHOLD,
    tolerance: float = DEFAULT_TOLERANCE,
) -> tuple[list[str], np.ndarray]:
    """Each span's speaker label (or ``UNKNOWN``) and the best speaker's share.

    The share is that of the best-covering speaker even when it falls below
    ``threshold``; an instant gets 1 when a turn is found for it, else 0.
    """
    spans = list(spans)
    turns = list(turns)
    labels = sorted({str(t.speaker) for t in turns})
    index = {label: i for i, label in enumerate(labels)}
    starts, ends = _times(spans, "words")
    turn_starts, turn_ends = _times(turns, "turns")
    speakers = np.fromiter((index[str(t.speaker)] for t in turns), np.int32, count=len(turns))
    ids, coverage = _core.align_spans(
        starts, ends, turn_starts, turn_ends, speakers, float(threshold), float(tolerance)
    )
    names = labels + [UNKNOWN]  # -1 picks the last
    return [names[i] for i in ids.tolist()], coverage


def nearest_turn_speakers(spans: Sequence[Span], turns: Sequence[TurnLike]) -> list[str]:
    """The speaker of the turn nearest to each span that overlaps no turn
    (what ``fill_nearest`` asks of it): the smallest gap, 0 where they touch;
    on equal gaps the turn before the span. ``UNKNOWN`` for all when there
    are no turns. O((S + T) log T): the turns sorted by start, a prefix maximum of
    their ends for the nearest turn before, a suffix minimum of their starts
    for the nearest after."""
    spans = list(spans)
    turns = sorted(turns, key=lambda t: (float(t.start), float(t.end), str(t.speaker)))
    if not turns:
        return [UNKNOWN] * len(spans)
    starts, ends = _times(spans, "words")
    turn_starts, turn_ends = _times(turns, "turns")
    # the turn ending last among those starting before the span's end lies
    # nearest before it (or overlaps it: gap 0)
    latest = np.maximum.accumulate(turn_ends)
    holder = np.zeros(len(turns), dtype=np.int64)
    for i in range(1, len(turns)):  # which turn reaches ``latest[i]``
        holder[i] = i if turn_ends[i] > latest[i - 1] else holder[i - 1]
    before = np.searchsorted(turn_starts, ends, side="left") - 1
    after = np.minimum(before + 1, len(turns) - 1)  # the first turn starting at or after the end
    labels = []
    for k in range(len(spans)):
        b, a = int(before[k]), int(after[k])
        gap_before = max(starts[k] - latest[b], 0.0) if b >= 0 else math.inf
        gap_after = turn_starts[a] - ends[k] if a > b else math.inf
        pick = holder[b] if gap_before <= gap_after else a
        labels.append(str(turns[pick].speaker))
    return labels


def assign_speakers(
    words: Sequence[Span],
    turns: Sequence[TurnLike],
    threshold: float = WORD_COVERAGE_THRESHOLD,
    tolerance: float = DEFAULT_TOLERANCE,
    fill_nearest: bool = False,
) -> list[str]:
    """The speaker label of each word (or segment), ``UNKNOWN`` where unsure,
    or with ``fill_nearest`` the best-covering speaker, else the nearest
    turn's, wherever there is a turn at all."""
    labels = speaker_coverage(words, turns, threshold, tolerance)[0]
    if not fill_nearest:
        return labels
    words = list(words)
    unsure = [k for k, label in enumerate(labels) if label == UNKNOWN]
    if unsure:
        # threshold 0: any overlap names the speaker that covers the most
        covered = speaker_coverage([words[k] for k in unsure], turns, 0.0, tolerance)[0]
        apart = [k for k, label in zip(unsure, covered) if label == UNKNOWN]
        nearest = iter(nearest_turn_speakers([words[k] for k in apart], turns))
        for k, label in zip(unsure, covered):
            labels[k] = label if label != UNKNOWN else next(nearest)
    return labels


SENTENCE_ENDS = (".", "?", "!", "\u2026", "\u3002", "\uff1f", "\uff01")  # ... and CJK's


def sentences(words: Sequence) -> list[range]:
    """The words in runs that each end with a word ending a sentence (or
    with the last word)."""
    out, first = [], 0
    for k, w in enumerate(words):
        if w.word.strip().endswith(SENTENCE_ENDS) or k == len(words) - 1:
            out.append(range(first, k + 1))
            first = k + 1
    return out


def keep_sentences_whole(
    words: Sequence[WordLike],
    labels: Sequence[str],
    turns: Sequence[TurnLike],
    threshold: float = WORD_COVERAGE_THRESHOLD,
    tolerance: float = DEFAULT_TOLERANCE,
) -> list[str]:
    """Labels where a sentence's stray words join the speaker of the rest of
    it, when the turns allow it.

    Exclusive turns hand each moment to one speaker, so where two people
    overlap, the first word of a new speaker's sentence ("I'm" of "I'm
    Sheila") may go to the one who is finishing. Here ``turns`` are the
    overlapping turns (everyone speaking): a word whose label differs from
    the speaker who says most of its sentence (by word time) takes that
    speaker if that speaker's own turns cover at least ``threshold`` of the
    word too. A real change mid-sentence, where the word times say only the
    other speaker talks, is kept.
    """
    words = list(words)
    labels = list(labels)
    names = sorted({str(t.speaker) for t in turns})
    if not words or not names:
        return labels
    covered = {}
    for name in names:
        own = [t for t in turns if str(t.speaker) == name]
        covered[name] = speaker_coverage(words, own, threshold, tolerance)[1]
    for sentence in sentences(words):
        said: dict[str, float] = {}
        for k in sentence:
            # a zero-length word still counts a little
            weight = max(float(words[k].end) - float(words[k].start), 0.01)
            said[labels[k]] = said.get(labels[k], 0.0) + weight
        ranked = sorted(said.items(), key=lambda item: -item[1])
        if len(ranked) < 2 or ranked[0][1] == ranked[1][1] or ranked[0][0] == UNKNOWN:
            continue
        speaker = ranked[0][0]
        for k in sentence:
            if labels[k] != speaker and covered[speaker][k] >= threshold:
                labels[k] = speaker
    return labels


def exclusive_turns(turns: Iterable[TurnLike]) -> list[Turn]:
    """One speaker at a time: where turns overlap, the newer turn speaks.

    While turns overlap, the one that started last holds the floor until it
    ends, then the one beneath it resumes if it is still going (on equal
    starts the shorter turn, then the label that sorts first). A short
    interjection inside a long turn so keeps its words. Pieces of one speaker
    that touch are merged; turns of zero duration vanish. The result is
    sorted by start. pyannote's exclusive diarization picks the most likely
    speaker per frame; turns carry no scores, so recency stands in for it.
    """
    items = []
    for t in turns:
        start, end = float(t.start), float(t.end)
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            raise _core.OptionError(
                f"turn [{start}, {end}]: times must be finite and end not before start"
            )
        if end > start:
            items.append((start, end, str(t.speaker)))
    items.sort()
    bounds = sorted({x for start, end, _ in items for x in (start, end)})
    active: list[tuple[float, float, str]] = []  # heap keyed (-start, end, speaker)
    out: list[Turn] = []
    k = 0
    for x, y in zip(bounds, bounds[1:]):
        while k < len(items) and items[k][0] <= x:
            start, end, speaker = items[k]
            heapq.heappush(active, (-start, end, speaker))
            k += 1
        while active and active[0][1] <= x:
            heapq.heappop(active)
        if not active:
            continue
        speaker = active[0][2]
        if out and out[-1].speaker == speaker and out[-1].end == x:
            out[-1] = Turn(out[-1].start, y, speaker)
        else:
            out.append(Turn(x, y, speaker))
    return out


def _absorb_unknown(labels: list[str]) -> list[str]:
    # An UNKNOWN word (a pause between turns, a loose Whisper boundary) stays
    # in the piece before it, or after it at the start of a segment, rather
    # than becoming a piece of its own.
    known = [label for label in labels if label != UNKNOWN]
    if not known:
        return labels
    out, current = [], known[0]
    for label in labels:
        if label != UNKNOWN:
            current = label
        out.append(current)
    return out


def _join_short_pieces(words: Sequence, pieces: list[str], min_piece: float) -> list[str]:
    # A change of speaker that lasts less than the diarization's shortest
    # turn is a turn's edge falling inside a word or two ("All" | "right"),
    # not a new speaker: such a piece joins its longer neighbour in the
    # segment (the one before on a tie).
    pieces = list(pieces)
    while True:
        cut = [k for k in range(1, len(pieces)) if pieces[k] != pieces[k - 1]]
        if not cut:
            return pieces
        bounds = list(zip([0] + cut, cut + [len(pieces)]))
        lengths = [float(words[b - 1].end) - float(words[a].start) for a, b in bounds]
        i = min(range(len(bounds)), key=lambda r: lengths[r])
        if lengths[i] >= min_piece:
            return pieces
        before = lengths[i - 1] if i > 0 else -1.0
        after = lengths[i + 1] if i + 1 < len(bounds) else -1.0
        a, b = bounds[i]
        pieces[a:b] = [
            pieces[bounds[i - 1][0]] if before >= after else pieces[bounds[i + 1][0]]
        ] * (b - a)


def split_segments_by_speaker(
    segments: Sequence,
    labels: Sequence[str],
    segment_labels: Sequence[str] | None = None,
    absorb_unknown: bool = True,
    min_piece: float = MIN_PIECE,
) -> list[SpeakerSegment]:
    """Segments cut where the speaker of their words changes.

    ``labels`` holds one label per word of every segment, in order (what
    :func:`assign_speakers` returns for all the words). Each piece runs from
    its first word's start to its last word's end; its text is its words
    joined as Whisper writes them (each carries its leading space), and every
    word keeps its own label. With ``absorb_unknown``, UNKNOWN words join the
    neighbouring piece instead of splitting the segment; a segment whose words
    are all UNKNOWN stays one UNKNOWN piece. A piece shorter than
    ``min_piece`` seconds (from its first word's start to its last word's
    end) joins its longer neighbour in the segment, and its words take that
    speaker: the speaker really changes inside a segment only for as long as
    a turn lasts. A segment without words keeps its text and gets
    ``segment_labels[i]`` (default ``UNKNOWN``).
    """
    segments = list(segments)
    labels = list(labels)
    total = sum(len(getattr(s, "words", None) or ()) for s in segments)
    if total != len(labels):
        raise _core.OptionError(f"{len(labels)} labels for {total} words")
    if segment_labels is not None and len(segment_labels) != len(segments):
        raise _core.OptionError(
            f"{len(segment_labels)} segment labels for {len(segments)} segments"
        )
    out: list[SpeakerSegment] = []
    k = 0
    for i, segment in enumerate(segments):
        words = list(getattr(segment, "words", None) or ())
        language = getattr(segment, "language", None)
        if not words:
            speaker = segment_labels[i] if segment_labels is not None else UNKNOWN
            out.append(
                SpeakerSegment(segment.start, segment.end, segment.text, speaker, [], language)
            )
            continue
        own = labels[k : k + len(words)]
        k += len(words)
        pieces = _absorb_unknown(own) if absorb_unknown else own
        joined = _join_short_pieces(words, pieces, min_piece) if min_piece > 0 else pieces
        own = [
            label if label == UNKNOWN or piece == was else piece
            for label, piece, was in zip(own, joined, pieces)
        ]
        pieces = joined
        for j, (word, label) in enumerate(zip(words, own)):
            aligned = SpeakerWord(
                float(word.start), float(word.end), word.word, float(word.probability), label
            )
            if j == 0 or pieces[j] != pieces[j - 1]:
                out.append(SpeakerSegment(aligned.start, aligned.end, "", pieces[j], [], language))
            piece = out[-1]
            piece.words.append(aligned)
            piece.end = aligned.end
            piece.text += aligned.word
    return out


def align_segments(
    segments: Sequence,
    turns: Sequence[TurnLike],
    threshold: float = WORD_COVERAGE_THRESHOLD,
    tolerance: float = DEFAULT_TOLERANCE,
    absorb_unknown: bool = True,
    fill_nearest: bool = True,
    overlapping_turns: Sequence[TurnLike] | None = None,
    min_piece: float = MIN_PIECE,
) -> list[SpeakerSegment]:
    """Transcribed segments and speaker turns in, speaker segments out.

    Words are assigned one by one and segments split at the word where the
    speaker changes; a segment without word timestamps is assigned as a
    whole. ``fill_nearest`` (default, as WhisperX's): words below the
    threshold or between turns take the best-covering or nearest speaker;
    False leaves them ``UNKNOWN``. With ``overlapping_turns`` (the
    diarization's turns with overlaps, ``turns`` being its exclusive ones),
    a sentence's stray words join the speaker of the rest of it where that
    speaker talks too (:func:`keep_sentences_whole`). A change of speaker
    shorter than ``min_piece`` seconds does not split a segment.
    """
    segments = list(segments)
    words = [w for s in segments for w in (getattr(s, "words", None) or ())]
    wordless = [s for s in segments if not getattr(s, "words", None)]
    labels = assign_speakers(words, turns, threshold, tolerance, fill_nearest)
    if overlapping_turns is not None:
        labels = keep_sentences_whole(words, labels, overlapping_turns, threshold, tolerance)
    whole = iter(assign_speakers(wordless, turns, threshold, tolerance, fill_nearest))
    segment_labels = [UNKNOWN if getattr(s, "words", None) else next(whole) for s in segments]
    return split_segments_by_speaker(segments, labels, segment_labels, absorb_unknown, min_piece)
