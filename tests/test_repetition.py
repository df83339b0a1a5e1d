"""The repetition guard: loops cut back to N copies, normal speech untouched."""

from __future__ import annotations

import pytest

import saywho
from saywho.whisper.repetition import SegmentRepeats, cut_repeats


@pytest.mark.parametrize(
    "tokens, n, expected",
    [
        ([1, 1, 1, 1, 1], 2, [1, 1]),
        ([5, 1, 2, 1, 2, 1, 2, 1, 2, 9], 2, [5, 1, 2, 1, 2, 9]),
        ([1, 2, 3, 1, 2, 3, 1, 2, 3], 3, [1, 2, 3, 1, 2, 3, 1, 2, 3]),  # three copies allowed
        ([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2], 2, [1, 2, 3, 1, 2, 3, 1, 2]),  # a partial copy stays
        ([7, 8, 9], 1, [7, 8, 9]),
        ([], 1, []),
    ],
)
def test_runs_are_cut_to_n_copies(tokens, n, expected):
    assert cut_repeats(tokens, n) == expected


def test_a_long_phrase_loop_is_cut():
    phrase = list(range(100, 120))  # 20 tokens
    assert cut_repeats([1] + phrase * 10 + [2], 2) == [1] + phrase * 2 + [2]


def test_repeated_segments_are_counted_without_case_or_punctuation():
    guard = SegmentRepeats(2)
    kept = [
        guard.keep(t) for t in [" Thank you.", " thank you", " Thank you!", " Bye.", " Thank you."]
    ]
    assert kept == [True, True, False, True, True]


def _longest_run(texts):
    best = run = 1
    for prev, cur in zip(texts, texts[1:]):
        run = run + 1 if cur == prev else 1
        best = max(best, run)
    return best


def test_a_real_loop_is_cut_and_the_rest_kept(whisper_models, recordings):
    """tiny.en, greedy at temperature 0, loops at the end of the 2-minute
    recording: " I'm a little bit more than I can do for you." a dozen times
    and more. A guard of 5 keeps five; every segment before is unchanged."""
    model = whisper_models["tiny.en"]
    plain = list(model.transcribe(recordings["long2"], beam_size=1, temperature=0)[0])
    guarded = model.transcribe(recordings["long2"], beam_size=1, temperature=0, repetition_guard=5)
    guarded = list(guarded[0])
    texts = [s.text for s in plain]
    assert _longest_run(texts) >= 10
    assert _longest_run([s.text for s in guarded]) == 5
    loop = next(i for i in range(len(texts)) if texts[i : i + 6] == [texts[i]] * 6)
    assert [s.tokens for s in guarded[: loop + 5]] == [s.tokens for s in plain[: loop + 5]]


def test_four_real_hellos_in_a_row_need_a_guard_above_3(whisper_models, recordings):
    model = whisper_models["tiny.en"]
    texts = [s.text for s in model.transcribe(recordings["long2"], beam_size=1, temperature=0)[0]]
    guarded = model.transcribe(recordings["long2"], beam_size=1, temperature=0, repetition_guard=3)
    guarded = [s.text for s in guarded[0]]
    run = [" Hello?", " Hello?", " Hello.", " Hello."]
    at = next(i for i in range(len(texts)) if texts[i : i + 4] == run)
    assert guarded[at : at + 4] == run[:3] + [texts[at + 4]]


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "3"])
def test_bad_guards_are_option_errors(whisper_models, recordings, bad):
    with pytest.raises(saywho.OptionError, match="repetition_guard"):
        whisper_models["tiny.en"].transcribe(recordings["jfk"], repetition_guard=bad)
