"""DER on hand-computed cases; each comment shows the arithmetic.

Convention checked here, as in pyannote.metrics: ``collar`` is the full width
of the zone forgiven around each reference boundary (collar / 2 each side).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from saywho import _core
from saywho.eval.metrics import diarization_error_rate, hungarian
from saywho.formats.rttm import Turn, read_rttm

from .conftest import shared_file


def T(start, end, speaker):
    return Turn(float(start), float(end), speaker)


def check(result, der, missed=0.0, false_alarm=0.0, confusion=0.0, total=None):
    assert result.der == pytest.approx(der, abs=1e-9)
    assert result.missed == pytest.approx(missed, abs=1e-9)
    assert result.false_alarm == pytest.approx(false_alarm, abs=1e-9)
    assert result.confusion == pytest.approx(confusion, abs=1e-9)
    if total is not None:
        assert result.total == pytest.approx(total, abs=1e-9)


def test_perfect_match_is_zero():
    ref = [T(0, 10, "A"), T(10, 20, "B")]
    hyp = [T(0, 10, "x"), T(10, 20, "y")]
    # total = 10 + 10 = 20, no error.
    result = diarization_error_rate(ref, hyp)
    check(result, 0.0, total=20)
    assert result.mapping == {"x": "A", "y": "B"}


def test_all_missed():
    ref = [T(0, 10, "A"), T(12, 20, "B")]
    # missed = 10 + 8 = 18 = total -> DER 1.
    check(diarization_error_rate(ref, []), 1.0, missed=18, total=18)


def test_pure_false_alarm():
    ref = [T(0, 10, "A")]
    hyp = [T(0, 10, "x"), T(10, 15, "y")]
    # [10, 15]: n_ref 0, n_hyp 1 -> false alarm 5; total 10 -> 5 / 10.
    result = diarization_error_rate(ref, hyp)
    check(result, 0.5, false_alarm=5, total=10)
    assert result.mapping == {"x": "A"}  # y shares no time with anyone


def test_label_permutation_is_not_confusion():
    ref = [T(0, 5, "A"), T(5, 10, "B")]
    hyp = [T(0, 5, "B"), T(5, 10, "A")]
    # Optimal mapping B->A, A->B makes every piece correct.
    result = diarization_error_rate(ref, hyp)
    check(result, 0.0, total=10)
    assert result.mapping == {"B": "A", "A": "B"}


def test_half_confusion():
    ref = [T(0, 10, "A")]
    hyp = [T(0, 5, "x"), T(5, 10, "y")]
    # Only one of x, y maps to A; the other's 5 s are confusion: 5 / 10.
    result = diarization_error_rate(ref, hyp)
    check(result, 0.5, confusion=5, total=10)
    assert len(result.mapping) == 1


def test_overlap_counts_each_speaker():
    ref = [T(0, 10, "A"), T(5, 10, "B")]
    # total = 10 (A) + 5 (B) = 15.
    # One hyp speaker: [5, 10] has n_ref 2, n_hyp 1 -> missed 5 -> 5 / 15.
    check(diarization_error_rate(ref, [T(0, 10, "x")]), 5 / 15, missed=5, total=15)
    # Three hyp speakers on [5, 10]: false alarm 1 * 5; x->A and y or z->B
    # are correct, so no confusion -> 5 / 15.
    hyp = [T(0, 10, "x"), T(5, 10, "y"), T(5, 10, "z")]
    check(diarization_error_rate(ref, hyp), 5 / 15, false_alarm=5, total=15)
    # Both speakers found: x->A, y->B -> 0 / 15.
    check(diarization_error_rate(ref, [T(0, 10, "x"), T(5, 10, "y")]), 0.0, total=15)


def test_confusion_inside_overlap():
    ref = [T(0, 10, "A"), T(0, 10, "B"), T(10, 20, "C")]
    hyp = [T(0, 10, "x"), T(0, 10, "y"), T(10, 20, "x")]
    # shared: x-A 10, x-B 10, x-C 10, y-A 10, y-B 10 -> e.g. x->C, y->A.
    # [0, 10]: n_ref 2, n_hyp 2, only y->A correct -> confusion 1 * 10.
    # [10, 20]: x->C correct. total = 10 + 10 + 10 = 30 -> 10 / 30.
    check(diarization_error_rate(ref, hyp), 10 / 30, confusion=10, total=30)


def test_collar_is_full_width_centred_on_reference_boundaries():
    ref = [T(0, 10, "A"), T(10, 20, "B")]
    hyp = [T(0, 10.1, "x"), T(10.1, 20, "y")]
    # No collar: [10, 10.1] x (->A) speaks over B -> confusion 0.1 / 20.
    check(diarization_error_rate(ref, hyp), 0.1 / 20, confusion=0.1, total=20)
    # collar 0.25 removes +-0.125 s: [0, 0.125], [9.875, 10.125], [19.875, 20]
    # -> total 20 - 0.125 - 0.25 - 0.125 = 19.5 and the 0.1 s error is gone.
    check(diarization_error_rate(ref, hyp, collar=0.25), 0.0, total=19.5)
    # collar 0.1 removes only +-0.05: [10.05, 10.1] stays wrong -> 0.05;
    # total 20 - 0.05 - 0.1 - 0.05 = 19.8. (A +-collar reading would give 0.)
    check(diarization_error_rate(ref, hyp, collar=0.1), 0.05 / 19.8, confusion=0.05, total=19.8)


def test_collar_at_boundaries_between_turns_of_one_speaker():
    ref = [T(0, 5, "A"), T(5, 10, "A")]
    # Boundaries 0, 5, 5, 10 with collar 1: remove [0, .5], [4.5, 5.5], [9.5, 10]
    # -> total 10 - 0.5 - 1 - 0.5 = 8.
    check(diarization_error_rate(ref, [T(0, 10, "x")], collar=1.0), 0.0, total=8)


def test_skip_overlap():
    ref = [T(0, 10, "A"), T(5, 12, "B")]
    hyp = [T(0, 12, "x")]
    # Without: x->A (10 s vs 7 s). [5,10] n_ref 2 n_hyp 1 -> missed 5;
    # [10,12] B vs x->A -> confusion 2; total 10 + 7 = 17 -> 7 / 17.
    check(diarization_error_rate(ref, hyp), 7 / 17, missed=5, confusion=2, total=17)
    # skip_overlap drops [5, 10]: [0,5] correct, [10,12] confusion 2;
    # total 5 + 2 = 7 -> 2 / 7.
    check(diarization_error_rate(ref, hyp, skip_overlap=True), 2 / 7, confusion=2, total=7)


def test_skip_overlap_changes_the_mapping():
    ref = [T(0, 10, "A"), T(0, 10, "B"), T(10, 14, "B")]
    hyp = [T(0, 10, "x"), T(10, 14, "y")]
    # Evaluated: only [10, 14] (overlap [0,10] skipped); y->B correct, x has
    # no evaluated time and stays unmapped -> DER 0, total 4.
    result = diarization_error_rate(ref, hyp, skip_overlap=True)
    check(result, 0.0, total=4)
    assert result.mapping == {"y": "B"}


def test_uem_limits_the_evaluation():
    ref = [T(0, 10, "A")]
    hyp = [T(0, 20, "x")]
    # Default uem spans [0, 20]: false alarm 10 / total 10.
    check(diarization_error_rate(ref, hyp), 1.0, false_alarm=10, total=10)
    # uem [2, 10]: total 8, no error.
    check(diarization_error_rate(ref, hyp, uem=[(2, 10)]), 0.0, total=8)


def test_nothing_to_score_and_tuples():
    check(diarization_error_rate([], []), 0.0, total=0)
    # No reference speech but some hypothesis: pyannote reports 1.
    check(diarization_error_rate([], [(0, 1, "x")]), 1.0, false_alarm=1, total=0)
    check(diarization_error_rate([(0, 1, "A")], [(0, 1, 7)]), 0.0, total=1)


def test_bad_input_is_an_option_error():
    with pytest.raises(_core.OptionError):
        diarization_error_rate([T(2, 1, "A")], [])
    with pytest.raises(_core.OptionError):
        diarization_error_rate([T(0, 1, "A")], [], collar=-1)


def test_shared_reference_against_itself_and_a_shift():
    ref = read_rttm(shared_file("two_speakers.rttm"))["sample"]
    result = diarization_error_rate(ref, ref)
    assert result.der == 0.0
    assert result.total == pytest.approx(sum(t.duration for t in ref))
    # Shifting every turn by 0.1 s errs only near boundaries: a 0.25 s collar
    # (+-0.125 s) forgives all of it.
    shifted = [T(t.start + 0.1, t.end + 0.1, t.speaker) for t in ref]
    assert diarization_error_rate(ref, shifted).der > 0
    assert diarization_error_rate(ref, shifted, collar=0.25).der == pytest.approx(0, abs=1e-9)


def test_hungarian_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n, m = (int(v) for v in rng.integers(1, 6, 2))
        cost = rng.integers(0, 4, (n, m)).astype(float) if trial % 2 else rng.random((n, m))
        rows, cols = hungarian(cost)
        k = min(n, m)
        assert len(rows) == k and len(set(rows)) == k and len(set(cols)) == k
        best = min(
            sum(cost[i, j] for i, j in zip(r, c))
            for r in itertools.combinations(range(n), k)
            for c in itertools.permutations(range(m), k)
        )
        assert cost[rows, cols].sum() == pytest.approx(best)


def test_agrees_with_pyannote_metrics_when_installed():
    """Random cases against the peer itself (a test-only dependency)."""
    pytest.importorskip("pyannote.metrics")
    import warnings

    from pyannote.core import Annotation, Segment, Timeline
    from pyannote.metrics.diarization import DiarizationErrorRate

    rng = np.random.default_rng(1)

    def turns(labels, n):
        # One turn per speaker label and slot, so no speaker overlaps itself
        # (pyannote would count such a speaker twice; saywho merges).
        out = []
        for label in labels:
            t = 0.0
            for _ in range(n):
                t += float(np.round(rng.uniform(0, 4), 2))
                d = float(np.round(rng.uniform(0.1, 4), 2))
                out.append(T(t, t + d, label))
                t += d
        return out

    def annotation(ts):
        a = Annotation()
        for i, t in enumerate(ts):
            a[Segment(t.start, t.end), i] = t.speaker
        return a

    for trial in range(60):
        ref = turns(["A", "B", "C"][: 1 + trial % 3], int(rng.integers(1, 5)))
        hyp = turns(["x", "y", "z", "w"][: trial % 4], int(rng.integers(1, 5)))
        collar = float(rng.choice([0.0, 0.25, 0.5]))
        skip = bool(trial % 2)
        uem = [(2.0, 20.0), (22.0, 28.0)] if trial % 3 == 0 else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            peer = DiarizationErrorRate(collar=collar, skip_overlap=skip)(
                annotation(ref),
                annotation(hyp),
                detailed=True,
                uem=Timeline([Segment(*u) for u in uem]) if uem else None,
            )
        ours = diarization_error_rate(ref, hyp, collar=collar, skip_overlap=skip, uem=uem)
        assert ours.total == pytest.approx(peer["total"], abs=1e-6)
        assert ours.missed == pytest.approx(peer["missed detection"], abs=1e-6)
        assert ours.false_alarm == pytest.approx(peer["false alarm"], abs=1e-6)
        assert ours.confusion == pytest.approx(peer["confusion"], abs=1e-6)
        assert ours.der == pytest.approx(peer["diarization error rate"], abs=1e-9)
