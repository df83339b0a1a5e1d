"""Turns a person would draw (issue 39): no turn and no pause within a
speaker shorter than the floor, an exclusive view that agrees with the
turns, and no zero-length line in any writer.

Real audio and the bundled models (segmentation-3.0 and CAM++): without the
floor, two_speakers.wav comes out with one-frame turns (0.017 s), the debris
the issue saw in RTTM output; pyannote's pipelines by name keep pyannote's
own floors (none).
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.diarization import Diarizer
from saywho.diarization.diarize import MIN_DURATION_OFF, MIN_DURATION_ON
from saywho.diarization.floor import apply_floor, exclusive_from
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.rttm import read_rttm
from saywho.models.bundled import resolve_embedding, resolve_segmentation

from .conftest import shared_file

MS = 1e-3  # turn times are written to the millisecond


@pytest.fixture(scope="module")
def diarizer():
    with Diarizer(resolve_segmentation(None), resolve_embedding(None)) as d:
        yield d


@pytest.fixture(scope="module")
def recordings():
    two = saywho.load_audio(shared_file("two_speakers.wav"))
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    jfk = saywho.load_audio(shared_file("jfk.wav"))
    # three voices: the conversation, Kennedy, the conversation again
    return {
        "two_speakers": (two, reference),
        "three_voices": (np.concatenate([two, jfk, two[: 15 * 16000]]), None),
    }


def _by_speaker(turns):
    out = {}
    for t in sorted(turns, key=lambda t: t.start):
        out.setdefault(t.speaker, []).append(t)
    return out


def _check_floors(result, on, off):
    for view in (result.turns, result.exclusive):
        assert view
        assert min(t.end - t.start for t in view) >= on - MS
    for own in _by_speaker(result.turns).values():
        for a, b in zip(own, own[1:]):
            assert b.start - a.end >= off - MS, (a, b)
    # the exclusive view: one speaker at a time, and only where the turns
    # have that speaker
    exclusive = sorted(result.exclusive, key=lambda t: t.start)
    for a, b in zip(exclusive, exclusive[1:]):
        assert a.end <= b.start + MS
    turns = _by_speaker(result.turns)
    for t in exclusive:
        assert any(u.start - MS <= t.start and t.end <= u.end + MS for u in turns[t.speaker]), t
    # a pause inside one speaker's exclusive speech is never a short silence
    for own in _by_speaker(exclusive).values():
        for a, b in zip(own, own[1:]):
            if b.start - a.end < off - MS:
                between = [t for t in exclusive if a.end - MS <= t.start and t.end <= b.start + MS]
                assert between, (a, b)


@pytest.mark.parametrize("name", ["two_speakers", "three_voices"])
def test_no_turn_or_pause_under_the_floor(diarizer, recordings, name):
    audio, reference = recordings[name]
    result = diarizer(audio)
    assert diarizer.min_duration_on == MIN_DURATION_ON > 0
    assert diarizer.min_duration_off == MIN_DURATION_OFF > 0
    _check_floors(result, MIN_DURATION_ON, MIN_DURATION_OFF)
    assert len(result.speakers) == (2 if name == "two_speakers" else 3)
    if reference is not None:
        assert diarization_error_rate(reference, result.turns, collar=0.0).der <= 0.06
        assert diarization_error_rate(reference, result.exclusive, collar=0.25).der <= 0.15


def test_without_the_floor_the_debris_is_there(recordings):
    """pyannote 3.1's own floors (0 and 0) leave one-frame turns on the
    same recording: the floor is what removes them."""
    audio, _ = recordings["two_speakers"]
    with Diarizer(
        resolve_segmentation(None),
        resolve_embedding(None),
        min_duration_on=0.0,
        min_duration_off=0.0,
    ) as bare:
        result = bare(audio)
    assert min(t.end - t.start for t in result.turns) < 0.05


def test_a_larger_floor_is_honoured(diarizer, recordings):
    audio, _ = recordings["three_voices"]
    with Diarizer(
        resolve_segmentation(None),
        resolve_embedding(None),
        min_duration_on=0.5,
        min_duration_off=0.4,
    ) as wide:
        result = wide(audio)
    _check_floors(result, 0.5, 0.4)


def test_rttm_written_has_no_line_under_the_floor(diarizer, recordings, tmp_path):
    audio, _ = recordings["two_speakers"]
    result = diarizer(audio)
    result.write_rttm(tmp_path / "out.rttm", "two")
    durations = [
        float(line.split()[4]) for line in (tmp_path / "out.rttm").read_text().splitlines()
    ]
    assert durations and min(durations) >= MIN_DURATION_ON


@pytest.mark.parametrize("value", [-0.1, 10.0, "0.2", None])
def test_bad_floors_are_option_errors(value):
    with pytest.raises(saywho.OptionError, match="min_duration_on"):
        Diarizer(resolve_segmentation(None), resolve_embedding(None), min_duration_on=value)


def test_floor_fills_short_gaps_then_drops_short_runs():
    col = np.array([1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1], bool)
    out = apply_floor(col[:, None], min_on=3, min_off=2)[:, 0]
    # the one-frame gap is filled, the lone frame dropped, the last run kept
    expected = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1], bool)
    np.testing.assert_array_equal(out, expected)


def test_exclusive_short_win_is_grown_inside_its_turn_or_handed_over():
    # speaker 1 speaks through frames 2-9 but wins only frame 5: its
    # exclusive run grows to the floor inside its own turn
    binary = np.zeros((12, 2), bool)
    binary[:, 0] = True
    binary[2:10, 1] = True
    act = np.ones((12, 2), np.float32)
    act[:, 0] = 2.0
    act[5, 1] = 3.0
    out = exclusive_from(binary, act, min_on=3)
    assert (out.sum(axis=1) == 1).all()
    runs = np.flatnonzero(np.diff(out[:, 1].astype(int)))
    assert out[:, 1].sum() >= 3 and len(runs) == 2 and binary[out[:, 1], 1].all()
    # speaker 1's turn is itself one frame long: its frame goes to speaker 0
    narrow = binary.copy()
    narrow[:, 1] = False
    narrow[5, 1] = True
    out = exclusive_from(narrow, act, min_on=3)
    assert not out[:, 1].any() and out[:, 0].all()
