"""Word-to-speaker alignment: hand-built rules, bad input, exclusive turns,
segment splitting, and 100k random words against a plain O(W*T) reference."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho.api.speaker_words import (
    UNKNOWN,
    SpeakerSegment,
    SpeakerWord,
    align_segments,
    assign_speakers,
    exclusive_turns,
    keep_sentences_whole,
    nearest_turn_speakers,
    speaker_coverage,
    split_segments_by_speaker,
)
from saywho.formats.rttm import Turn


@dataclass
class W:
    start: float
    end: float
    word: str = " w"
    probability: float = 0.9


@dataclass
class Seg:
    start: float
    end: float
    text: str
    words: list | None = None


TURNS = [Turn(2.0, 4.0, "B"), Turn(5.0, 6.0, "C"), Turn(0.0, 2.0, "A")]  # unsorted


def test_word_inside_one_turn():
    labels, coverage = speaker_coverage([W(0.5, 1.0), W(2.1, 3.9)], TURNS)
    assert labels == ["A", "B"]
    assert coverage.tolist() == [1.0, 1.0]


def test_word_spanning_two_turns_goes_to_the_larger_overlap():
    labels, coverage = speaker_coverage([W(1.5, 2.7), W(1.9, 2.05)], TURNS)
    assert labels == ["B", "A"]
    assert coverage[0] == pytest.approx(0.7 / 1.2)


def test_below_threshold_is_unknown():
    # best is C with 0.4 of 1.2 s
    word = [W(4.2, 5.4)]
    labels, coverage = speaker_coverage(word, TURNS)
    assert labels == [UNKNOWN]
    assert coverage[0] == pytest.approx(0.4 / 1.2)
    assert assign_speakers(word, TURNS, threshold=0.3) == ["C"]
    assert assign_speakers(word, TURNS, threshold=0.0) == ["C"]
    # in a gap, after every turn, or with no turns at all
    assert assign_speakers([W(4.0, 5.0), W(9.0, 9.5)], TURNS, threshold=0.0) == [UNKNOWN] * 2
    assert assign_speakers([W(1.0, 2.0)], [], threshold=0.0) == [UNKNOWN]


def test_exact_tie_goes_to_the_turn_that_starts_first():
    turns = [Turn(2.0, 4.0, "A_first_label"), Turn(0.0, 2.0, "Z_starts_first")]
    assert assign_speakers([W(1.0, 3.0)], turns) == ["Z_starts_first"]
    # equal starts (overlapping turns): the label that sorts first
    turns = [Turn(0.0, 2.0, "Y"), Turn(0.0, 2.0, "X")]
    assert assign_speakers([W(0.0, 1.0)], turns) == ["X"]


def test_turn_order_does_not_matter():
    words = [W(x, x + d) for x, d in [(0.1, 0.5), (1.7, 0.8), (3.9, 1.2), (5.5, 0.0)]]
    expected = assign_speakers(words, sorted(TURNS, key=lambda t: t.start))
    for seed in range(5):
        shuffled = TURNS[:]
        random.Random(seed).shuffle(shuffled)
        assert assign_speakers(words, shuffled) == expected
    assert expected == ["A", "B", UNKNOWN, "C"]


def test_empty_inputs():
    assert assign_speakers([], TURNS) == []
    assert assign_speakers([], []) == []
    labels, coverage = speaker_coverage([], [])
    assert labels == [] and coverage.shape == (0,)


def test_zero_duration_words():
    turns = [Turn(0.0, 2.0, "A"), Turn(2.0, 2.875, "B"), Turn(3.0, 4.0, "C")]
    instants = [2.0, 1.0, 4.05, -0.05, 2.9375, 4.5, 2.5]
    labels, coverage = speaker_coverage([W(t, t) for t in instants], turns)
    # a shared boundary goes to the turn that starts first; 0.05 s outside a
    # turn is within the 0.1 s tolerance; mid-gap goes to the earlier turn
    assert labels == ["A", "A", "C", "A", "B", UNKNOWN, "B"]
    assert coverage.tolist() == [1, 1, 1, 1, 1, 0, 1]
    assert assign_speakers([W(4.05, 4.05)], turns, tolerance=0.0) == [UNKNOWN]
    assert assign_speakers([W(4.5, 4.5)], turns, tolerance=1.0) == ["C"]


def test_a_speakers_own_overlapping_turns_count_once():
    turns = [Turn(0.0, 2.0, "A"), Turn(1.0, 3.0, "A"), Turn(2.5, 2.8, "B")]
    labels, coverage = speaker_coverage([W(0.0, 3.0)], turns)
    assert labels == ["A"] and coverage[0] == 1.0


@pytest.mark.parametrize(
    "words, turns",
    [
        ([W(math.nan, 1.0)], TURNS),
        ([W(0.0, math.inf)], TURNS),
        ([W(2.0, 1.0)], TURNS),
        ([W(0.0, 1.0)], [Turn(3.0, 2.0, "A")]),
        ([W(0.0, 1.0)], [Turn(math.nan, 2.0, "A")]),
        ([W(None, 1.0)], TURNS),
        ([W("soon", 1.0)], TURNS),
    ],
)
def test_bad_times_are_option_errors(words, turns):
    with pytest.raises(saywho.OptionError):
        assign_speakers(words, turns)


def test_bad_options_and_lengths_are_option_errors():
    for kwargs in ({"threshold": 1.5}, {"threshold": math.nan}, {"tolerance": -1.0}):
        with pytest.raises(saywho.OptionError):
            assign_speakers([W(0.0, 1.0)], TURNS, **kwargs)
    with pytest.raises(saywho.OptionError, match="lengths differ"):
        _core.align_spans([0.0, 1.0], [1.0], [0.0], [1.0], [0])
    with pytest.raises(saywho.OptionError, match="lengths differ"):
        _core.align_spans([0.0], [1.0], [0.0], [1.0], [0, 1])
    with pytest.raises(saywho.OptionError, match="speaker"):
        _core.align_spans([0.0], [1.0], [0.0], [1.0], [-1])
    with pytest.raises(saywho.OptionError, match="dimension"):
        _core.align_spans([[0.0]], [[1.0]], [0.0], [1.0], [0])
    with pytest.raises(saywho.OptionError, match="labels for"):
        split_segments_by_speaker([Seg(0, 1, " a", [W(0, 1)])], ["A", "B"])


# --- a plain reference: every word against every turn -----------------------


def _merge_own_overlaps(starts, ends, speakers):
    kept = []
    for s, a, b in sorted(zip(speakers, starts, ends)):
        if kept and kept[-1][0] == s and a < kept[-1][2]:
            kept[-1][2] = max(kept[-1][2], b)
        else:
            kept.append([s, a, b])
    kept.sort(key=lambda t: (t[1], t[0], t[2]))
    return [np.array(c) for c in zip(*kept)]


def reference(ws, we, ts, te, sp, n_speakers, threshold=0.5, tolerance=0.1):
    """The rule of docs/alignment.md, O(W*T): turns visited in start order
    (so the sums add up in the same order as the core's sweep)."""
    sp, ts, te = _merge_own_overlaps(ts, te, sp)
    n = ws.size
    sums = np.zeros((n, n_speakers))
    first = np.full((n, n_speakers), np.inf)
    for a, b, s in zip(ts, te, sp):
        overlap = np.minimum(we, b) - np.maximum(ws, a)
        hit = overlap > 0
        sums[hit, s] += overlap[hit]
        first[hit & np.isinf(first[:, s]), s] = a
    touched = np.isfinite(first)
    best_sum = np.where(touched, sums, -1.0).max(axis=1)
    winners = touched & (sums == best_sum[:, None])
    best = np.argmin(np.where(winners, first, np.inf), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        coverage = np.minimum(sums[np.arange(n), best] / (we - ws), 1.0)
    coverage = np.where(touched.any(axis=1), coverage, 0.0)
    out = np.where(touched.any(axis=1) & (coverage >= threshold), best, -1)
    instants = np.flatnonzero(we == ws)
    if instants.size:
        t = ws[instants, None]
        gap = np.maximum(np.maximum(ts[None, :] - t, t - te[None, :]), 0.0)
        j = np.argmin(gap, axis=1)
        ok = gap[np.arange(instants.size), j] <= tolerance
        out[instants] = np.where(ok, sp[j], -1)
        coverage[instants] = ok.astype(float)
    return out, coverage


def _random_case(rng, n_words, n_turns, n_speakers, grid=None, overlapping=False):
    gaps = np.where(rng.random(n_turns) < 0.3, rng.random(n_turns), 0.0)
    lengths = 0.2 + 5.0 * rng.random(n_turns)
    if grid:
        gaps, lengths = np.round(gaps / grid) * grid, np.round(lengths / grid) * grid + grid
    ends = np.cumsum(gaps + lengths)
    starts = ends - lengths
    if overlapping:  # stretch some turns into their neighbours
        ends = ends + np.where(rng.random(n_turns) < 0.3, 3.0 * rng.random(n_turns), 0.0)
    speakers = rng.integers(0, n_speakers, n_turns)
    order = rng.permutation(n_turns)
    starts, ends, speakers = starts[order], ends[order], speakers[order]
    total = ends.max()
    ws = rng.random(n_words) * (total + 2.0) - 1.0
    we = ws + np.where(rng.random(n_words) < 0.05, 0.0, 3.0 * rng.random(n_words))
    if grid:
        ws, we = np.round(ws / grid) * grid, np.round(we / grid) * grid
    return ws, we, starts, ends, speakers


@pytest.mark.parametrize(
    "grid, overlapping", [(None, False), (0.02, False), (None, True), (0.1, True)]
)
def test_random_words_match_the_plain_reference(grid, overlapping):
    rng = np.random.default_rng(7)
    n_speakers = 6
    ws, we, ts, te, sp = _random_case(rng, 100_000, 300, n_speakers, grid, overlapping)
    names = [f"SPEAKER_{i:02d}" for i in range(n_speakers)]
    words = [W(a, b) for a, b in zip(ws.tolist(), we.tolist())]
    turns = [Turn(a, b, names[s]) for a, b, s in zip(ts.tolist(), te.tolist(), sp.tolist())]
    labels, coverage = speaker_coverage(words, turns)
    want, want_coverage = reference(ws, we, ts, te, sp, n_speakers)
    assert labels == [names[i] if i >= 0 else UNKNOWN for i in want.tolist()]
    np.testing.assert_array_equal(coverage, want_coverage)
    # the cases are not trivial: every outcome occurs
    assert UNKNOWN in labels and len(set(labels)) == n_speakers + 1
    assert np.count_nonzero(we == ws) > 1000


# --- exclusive turns ----------------------------------------------------------


def test_exclusive_turns_hand_built():
    # B interjects inside A; C overlaps A's end; D starts with E, E is shorter
    turns = [
        Turn(10.0, 12.0, "D"),
        Turn(0.0, 5.0, "A"),
        Turn(1.0, 2.0, "B"),
        Turn(4.0, 6.0, "C"),
        Turn(10.0, 11.0, "E"),
        Turn(7.0, 7.0, "Z"),  # no duration: gone
    ]
    assert exclusive_turns(turns) == [
        Turn(0.0, 1.0, "A"),
        Turn(1.0, 2.0, "B"),
        Turn(2.0, 4.0, "A"),
        Turn(4.0, 6.0, "C"),
        Turn(10.0, 11.0, "E"),
        Turn(11.0, 12.0, "D"),
    ]
    # a speaker's overlapping or touching turns become one
    assert exclusive_turns([Turn(0, 2, "A"), Turn(1, 3, "A"), Turn(3, 4, "A")]) == [Turn(0, 4, "A")]
    assert exclusive_turns([]) == []
    with pytest.raises(saywho.OptionError):
        exclusive_turns([Turn(2.0, 1.0, "A")])
    with pytest.raises(saywho.OptionError):
        exclusive_turns([Turn(math.nan, 1.0, "A")])


def test_exclusive_turns_cover_the_same_time_one_speaker_at_a_time():
    rng = np.random.default_rng(3)
    _, _, ts, te, sp = _random_case(rng, 0, 400, 4, overlapping=True)
    turns = [Turn(a, b, f"S{s}") for a, b, s in zip(ts.tolist(), te.tolist(), sp.tolist())]
    out = exclusive_turns(turns)
    assert all(a.end <= b.start for a, b in zip(out, out[1:]))
    assert all(t.end > t.start for t in out)
    # every instant covered before is covered after, by one of its speakers
    for x in rng.random(2000) * te.max():
        before = {t.speaker for t in turns if t.start < x < t.end}
        after = [t.speaker for t in out if t.start < x < t.end]
        assert (len(after) == 1 and after[0] in before) if before else not after


# --- segments ------------------------------------------------------------------


def _words(spec):
    return [W(a, b, text, p) for a, b, text, p in spec]


def test_split_segments_where_the_speaker_changes():
    seg1 = Seg(
        0.0,
        4.0,
        " Hi there. Oh hello!",
        _words(
            [
                (0.0, 0.5, " Hi", 0.9),
                (0.5, 1.0, " there.", 0.8),
                (2.0, 2.5, " Oh", 0.7),
                (2.5, 3.0, " hello!", 0.6),
            ]
        ),
    )
    seg2 = Seg(4.0, 5.0, " (no words)")
    seg3 = Seg(5.0, 6.0, " Bye.", _words([(5.0, 6.0, " Bye.", 0.5)]))
    labels = ["A", "A", "B", "B", "A"]
    out = split_segments_by_speaker([seg1, seg2, seg3], labels, ["-", "B", "-"])
    assert [(s.start, s.end, s.text, s.speaker) for s in out] == [
        (0.0, 1.0, " Hi there.", "A"),
        (2.0, 3.0, " Oh hello!", "B"),
        (4.0, 5.0, " (no words)", "B"),
        (5.0, 6.0, " Bye.", "A"),
    ]
    assert out[1].words == [
        SpeakerWord(2.0, 2.5, " Oh", 0.7, "B"),
        SpeakerWord(2.5, 3.0, " hello!", 0.6, "B"),
    ]
    assert split_segments_by_speaker([seg2], [])[0].speaker == UNKNOWN


def test_unknown_words_stay_with_their_neighbours_unless_asked():
    seg = Seg(
        0.0,
        4.0,
        " one two three four",
        _words(
            [
                (0.0, 1.0, " one", 1.0),
                (1.0, 2.0, " two", 1.0),
                (2.0, 3.0, " three", 1.0),
                (3.0, 4.0, " four", 1.0),
            ]
        ),
    )
    labels = [UNKNOWN, "A", UNKNOWN, "B"]
    out = split_segments_by_speaker([seg], labels)
    assert [(s.text, s.speaker) for s in out] == [(" one two three", "A"), (" four", "B")]
    assert [w.speaker for w in out[0].words] == [UNKNOWN, "A", UNKNOWN]
    literal = split_segments_by_speaker([seg], labels, absorb_unknown=False)
    assert [s.speaker for s in literal] == [UNKNOWN, "A", UNKNOWN, "B"]
    lost = split_segments_by_speaker([seg], [UNKNOWN] * 4)
    assert [(s.text, s.speaker) for s in lost] == [(" one two three four", UNKNOWN)]


def test_align_segments_end_to_end():
    turns = [Turn(0.0, 1.6, "SPEAKER_00"), Turn(1.6, 4.0, "SPEAKER_01")]
    segments = [
        Seg(
            0.0,
            3.0,
            " Are you there? Yes.",
            _words(
                [
                    (0.0, 0.4, " Are", 0.9),
                    (0.4, 0.8, " you", 0.9),
                    (0.8, 1.4, " there?", 0.9),
                    (2.0, 3.0, " Yes.", 0.9),
                ]
            ),
        ),
        Seg(3.0, 3.9, " Sure.", None),
    ]
    out = align_segments(segments, turns)
    assert out == [
        SpeakerSegment(
            0.0,
            1.4,
            " Are you there?",
            "SPEAKER_00",
            [
                SpeakerWord(0.0, 0.4, " Are", 0.9, "SPEAKER_00"),
                SpeakerWord(0.4, 0.8, " you", 0.9, "SPEAKER_00"),
                SpeakerWord(0.8, 1.4, " there?", 0.9, "SPEAKER_00"),
            ],
        ),
        SpeakerSegment(
            2.0, 3.0, " Yes.", "SPEAKER_01", [SpeakerWord(2.0, 3.0, " Yes.", 0.9, "SPEAKER_01")]
        ),
        SpeakerSegment(3.0, 3.9, " Sure.", "SPEAKER_01", []),
    ]


# --- nearest speaker, whole sentences ----------------------------------------------


def test_fill_nearest_names_every_word_while_there_are_turns():
    words = [
        W(4.0, 5.0),  # touches B's end and C's start: equal gaps, the earlier turn
        W(4.2, 4.5),  # 0.2 s after B, 0.5 s before C
        W(4.6, 4.9),  # 0.1 s before C
        W(3.8, 4.8),  # B covers a fifth: below the threshold, still B's most
        W(4.5, 5.2),  # C covers 0.2 of 0.7
        W(9.0, 9.5),  # after everything: the last turn
        W(-2.0, -1.0),  # before everything: the first
        W(5.2, 5.2),  # an instant inside C
    ]
    assert assign_speakers(words, TURNS) == ["UNKNOWN"] * 5 + ["UNKNOWN", "UNKNOWN", "C"]
    assert assign_speakers(words, TURNS, fill_nearest=True) == [
        "B", "B", "C", "B", "C", "C", "A", "C",
    ]  # fmt: skip
    assert assign_speakers(words, [], fill_nearest=True) == [UNKNOWN] * len(words)


def _nearest_reference(spans, turns):
    out = []
    for s in spans:
        best = None
        for t in sorted(turns, key=lambda t: (t.start, t.end, t.speaker)):
            gap = max(t.start - s.end, s.start - t.end, 0.0)
            if best is None or gap < best[0]:
                best = (gap, t.speaker)
        out.append(best[1] if best else UNKNOWN)
    return out


def test_nearest_turn_matches_a_plain_reference():
    rng = random.Random(7)
    for _ in range(30):
        turns = []
        for _ in range(rng.randint(1, 12)):
            a = rng.uniform(0, 60)
            turns.append(Turn(a, a + rng.uniform(0.1, 8), rng.choice("ABCD")))
        spans = []
        for _ in range(50):
            a = rng.uniform(-5, 75)
            spans.append(W(a, a + rng.uniform(0, 1)))
        # what fill_nearest asks: spans under no turn (equal gaps have
        # measure zero here)
        apart = [s for s in spans if all(s.end <= t.start or s.start >= t.end for t in turns)]
        assert len(apart) > 5
        assert nearest_turn_speakers(apart, turns) == _nearest_reference(apart, turns)


def _said(items):
    return [W(a, b, w) for a, b, w in items]


def test_a_sentence_stays_with_its_speaker_where_both_talk():
    words = _said(
        [
            (0.0, 0.5, " This"),
            (0.5, 1.0, " is"),
            (1.0, 1.5, " Diane."),
            (1.9, 2.1, " I'm"),  # the exclusive turns still give it to A
            (2.2, 2.8, " Sheila"),
            (2.8, 3.2, " from"),
            (3.2, 3.9, " Texas."),
        ]
    )
    labels = ["A", "A", "A", "A", "B", "B", "B"]
    overlapping = [Turn(0.0, 2.15, "A"), Turn(1.85, 4.0, "B")]
    assert keep_sentences_whole(words, labels, overlapping) == ["A"] * 3 + ["B"] * 4
    # where B's own turn does not cover the word, the word times win
    late = [Turn(0.0, 2.15, "A"), Turn(2.15, 4.0, "B")]
    assert keep_sentences_whole(words, labels, late) == labels


def test_align_segments_splits_at_the_word_where_the_speaker_changes():
    """The symptom of issue 26 on the bundled sample, by hand: Whisper's
    segment ends with the first word of the next speaker's sentence."""
    exclusive = [Turn(0.5, 2.15, "A"), Turn(2.15, 4.0, "B")]
    overlapping = [Turn(0.5, 2.15, "A"), Turn(1.85, 4.0, "B")]
    first = _words(
        [(0.0, 0.4, " Hello.", 0.9), (1.0, 1.5, " Diane.", 0.9), (1.9, 2.1, " I'm", 0.9)]
    )
    second = _words([(2.2, 2.8, " Sheila", 0.9), (2.8, 3.9, " here.", 0.9)])
    segments = [Seg(0.0, 2.1, " Hello. Diane. I'm", first), Seg(2.2, 3.9, " Sheila here.", second)]
    out = align_segments(segments, exclusive, overlapping_turns=overlapping)
    assert [(s.text, s.speaker) for s in out] == [
        (" Hello. Diane.", "A"),  # "Hello." before any turn: the nearest speaker
        (" I'm", "B"),
        (" Sheila here.", "B"),
    ]
    unknown = align_segments(segments, exclusive, fill_nearest=False)
    assert unknown[0].words[0].speaker == UNKNOWN


def test_a_word_is_not_split_from_its_segment_by_a_turns_edge():
    """Issue 39's "All right" across two speakers: the exclusive turn of
    SPEAKER_01 starts just before the instant Whisper gave " right", so
    the word went to it alone. A change of speaker shorter than any turn does not
    split a segment; one that lasts does."""
    seg = Seg(
        55.0,
        56.6,
        " Okay. All right",
        _words(
            [(55.0, 55.6, " Okay.", 0.9), (56.2, 56.6, " All", 0.9), (56.6, 56.6, " right", 0.9)]
        ),
    )
    turns = [Turn(54.0, 56.5, "SPEAKER_00"), Turn(56.5, 58.0, "SPEAKER_01")]
    (one,) = align_segments([seg], turns)
    assert (one.text, one.speaker) == (" Okay. All right", "SPEAKER_00")
    assert [w.speaker for w in one.words] == ["SPEAKER_00"] * 3
    assert [p.speaker for p in align_segments([seg], turns, min_piece=0.0)] == [
        "SPEAKER_00",
        "SPEAKER_01",
    ]
    # the same words with a real change: " right" said well into SPEAKER_01's turn
    seg.words[2] = W(56.6, 57.4, " right", 0.9)
    pieces = align_segments([seg], turns)
    assert [(p.text, p.speaker) for p in pieces] == [
        (" Okay. All", "SPEAKER_00"),
        (" right", "SPEAKER_01"),
    ]
    # and the rule can be turned off
    literal = align_segments([seg], turns, min_piece=0.0)
    assert len(literal) == 2


def test_a_short_piece_joins_its_longer_neighbour():
    words = _words([(0.0, 1.0, " one", 0.9), (1.0, 1.1, " two", 0.9), (1.1, 1.5, " three", 0.9)])
    seg = Seg(0.0, 1.5, " one two three", words)
    out = split_segments_by_speaker([seg], ["A", "B", "C"])
    assert [(p.text, p.speaker) for p in out] == [(" one two", "A"), (" three", "C")]
    assert [w.speaker for w in out[0].words] == ["A", "A"]
