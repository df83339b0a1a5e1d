"""Known speakers: clips of named voices name the speakers diarization
finds, on the real two-speaker conversation (clips cut from its first part,
the rest of it checked against the reference) and with a voice that is not
in it (Kennedy); the one-to-one assignment; bad input."""

from __future__ import annotations

import itertools
import wave

import numpy as np
import pytest

import saywho
from saywho.api.known_speakers import best_assignment, check_known, load_clip, match_speakers
from saywho.audio.decode import load_audio
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.rttm import read_rttm

from .conftest import shared_file
from .weights import test_model_dir

SR = 16000
# Where each voice of two_speakers.wav talks alone in its reference RTTM:
# speaker90 ("This is Diane in New Jersey") and speaker91 ("I'm Sheila").
DIANE = (11.1, 14.4)
SHEILA = (14.8, 17.8)
CHECKED_FROM = 18.0  # the words after the clips are the ones scored


def _brute_force(score):
    rows, cols = score.shape
    best = 0.0
    for k in range(min(rows, cols) + 1):
        for chosen in itertools.combinations(range(rows), k):
            for perm in itertools.permutations(range(cols), k):
                total = sum(max(score[i, j], 0.0) for i, j in zip(chosen, perm))
                best = max(best, total)
    return best


def test_best_assignment_is_optimal_and_one_to_one():
    rng = np.random.default_rng(3)
    for shape in [(1, 1), (2, 3), (3, 2), (3, 3), (4, 2), (2, 4), (4, 4)]:
        for _ in range(10):
            score = rng.normal(size=shape)
            pairs = best_assignment(score)
            assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
            assert all(score[i, j] > 0 for i, j in pairs)
            assert sum(score[i, j] for i, j in pairs) == pytest.approx(_brute_force(score))


def _at(*degrees):
    return np.array([[np.cos(np.radians(d)), np.sin(np.radians(d))] for d in degrees])


def test_one_name_per_speaker_not_the_greedy_best():
    centroids = _at(0, 60)  # S0, S1
    voices = _at(20, -30)  # Ann, Bob
    names, similarity = match_speakers(centroids, ["S0", "S1"], voices, ["Ann", "Bob"], 0.5)
    # greedy would pair the most alike (S0 and Ann) and leave Bob, whose only
    # match is S0, unnamed; the assignment names both
    assert similarity.argmax() == 0 and similarity[1, 1] < 0.5
    assert names == {"S0": "Bob", "S1": "Ann"}
    # a name is used at most once, and below the threshold nobody is named
    alone, _ = match_speakers(centroids, ["S0", "S1"], _at(30), ["Ann"], 0.5)
    assert list(alone.values()) == ["Ann"]
    none, _ = match_speakers(centroids, ["S0", "S1"], _at(180, 200), ["Ann", "Bob"], 0.5)
    assert none == {}


def test_bad_known_speakers_are_clear_errors(tmp_path):
    with pytest.raises(saywho.OptionError, match="dict of name"):
        check_known([("Ann", "a.wav")])
    with pytest.raises(saywho.OptionError, match="non-empty"):
        check_known({" ": "a.wav"})
    with pytest.raises(saywho.OptionError, match="saywho's own labels"):
        check_known({"SPEAKER_01": "a.wav"})
    with pytest.raises(saywho.OptionError, match="a path, 16 kHz mono samples or a list"):
        check_known({"Ann": 3})
    assert check_known({"Ann": ["a.wav", "b.wav"]}) == {"Ann": ["a.wav", "b.wav"]}
    with pytest.raises(saywho.AudioError, match="nothing.wav"):
        load_clip("Ann", tmp_path / "nothing.wav")
    with pytest.raises(saywho.AudioError, match="at least 1 s"):
        load_clip("Ann", np.zeros(SR // 2, np.float32))
    with pytest.raises(saywho.AudioError, match="1-D float"):
        load_clip("Ann", np.zeros((2, SR), np.float32))


def _cut(samples, span):
    return samples[int(span[0] * SR) : int(span[1] * SR)].copy()


def _write_wav(path, samples):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    return path


@pytest.fixture(scope="module")
def pipeline():
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        yield p


def test_clips_from_one_part_name_the_rest(pipeline, tmp_path):
    audio = shared_file("two_speakers.wav")
    samples = load_audio(audio)
    diane = _write_wav(tmp_path / "diane.wav", _cut(samples, DIANE))
    known = {"Diane": diane, "Sheila": [_cut(samples, SHEILA)]}  # a path; a list of samples
    result = pipeline.process(audio, beam_size=1, known_speakers=known)
    assert sorted(result.speakers) == ["Diane", "Sheila"]
    assert sorted(result.options["known_speakers"].values()) == ["Diane", "Sheila"]
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    truth = {"speaker90": "Diane", "speaker91": "Sheila"}
    mapping = diarization_error_rate(reference, result.turns).mapping
    assert {name: truth[ref] for name, ref in mapping.items()} == {n: n for n in mapping}
    checked = agree = 0
    for s in result.segments:
        for w in s.words:
            mid = (w.start + w.end) / 2
            talking = {truth[t.speaker] for t in reference if t.start <= mid < t.end}
            if mid >= CHECKED_FROM and len(talking) == 1:
                checked += 1
                agree += w.speaker in talking
    assert checked > 20 and agree >= 0.85 * checked
    # the names are in every file
    out = result.write(tmp_path / "out")
    for path in out:
        assert "Diane" in path.read_text(encoding="utf-8"), path.name
    assert "<v Sheila>" in (tmp_path / "out" / "transcript.vtt").read_text()
    assert "Sheila:" in result.text and "SPEAKER_0" not in result.text


def test_a_voice_that_is_not_there_names_nobody(pipeline):
    audio = shared_file("two_speakers.wav")
    result = pipeline.process(
        audio, transcribe=False, known_speakers={"Kennedy": shared_file("jfk.wav")}
    )
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    assert result.options["known_speakers"] is None


def test_known_speakers_need_diarization(pipeline):
    with pytest.raises(saywho.OptionError, match="needs diarization"):
        pipeline.process(shared_file("jfk.wav"), diarize=False, known_speakers={"K": "x.wav"})


def test_speaker_embedding_lives_in_the_centroids_space(pipeline):
    samples = load_audio(shared_file("two_speakers.wav"))
    found = pipeline.diarize(samples)
    clips = np.stack([pipeline.speaker_embedding(_cut(samples, s)) for s in (DIANE, SHEILA)])
    assert clips.shape == (2, found.embeddings.shape[1])
    _, similarity = match_speakers(found.embeddings, found.speakers, clips, ["D", "S"], 0.5)
    threshold = pipeline.known_speaker_threshold
    # each clip is its own speaker's, well above the threshold, and not the other's
    assert sorted(similarity.argmax(axis=0).tolist()) == [0, 1]
    assert (similarity.max(axis=0) > threshold + 0.2).all()
    assert (similarity.min(axis=0) < threshold - 0.1).all()
    with pytest.raises(saywho.AudioError, match="speaker clip"):
        pipeline.speaker_embedding(np.zeros(100, np.float32))
