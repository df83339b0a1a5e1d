"""Pipeline.process: transcription, diarization and alignment in one call,
on the real two-speaker conversation with the real test weights (Whisper)
and the diarization models the wheel ships (segmentation-3.0 and CAM++)."""

from __future__ import annotations

import pytest

import saywho
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.rttm import read_rttm

from .conftest import shared_file
from .weights import test_model_dir


@pytest.fixture(scope="module")
def pipeline():
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        yield p


@pytest.fixture(scope="module")
def conversation(pipeline):
    heard = []
    result = pipeline.process(
        shared_file("two_speakers.wav"), beam_size=1, progress=lambda *a: heard.append(a)
    )
    return result, heard


def test_every_word_has_a_speaker_a_time_and_a_probability(conversation):
    result, _ = conversation
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    words = [w for s in result.segments for w in s.words]
    assert len(words) > 50
    for w in words:
        assert w.end >= w.start >= 0.0
        assert w.speaker in ("SPEAKER_00", "SPEAKER_01", "UNKNOWN")
        assert 0.0 <= w.probability <= 1.0
    # segments were split where the speaker changes: each holds one speaker
    for s in result.segments:
        assert s.speaker in ("SPEAKER_00", "SPEAKER_01", "UNKNOWN")
        assert {w.speaker for w in s.words} <= {s.speaker, "UNKNOWN"}
    assert sum(w.speaker == "UNKNOWN" for w in words) <= 0.1 * len(words)


def test_words_go_to_the_reference_speaker(conversation):
    """Each word's speaker, mapped to the reference's names, is the speaker
    the reference has talking alone at the word's middle, for most words."""
    result, _ = conversation
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    mapping = diarization_error_rate(reference, result.turns).mapping
    checked = agree = 0
    for s in result.segments:
        for w in s.words:
            mid = (w.start + w.end) / 2
            talking = {t.speaker for t in reference if t.start <= mid < t.end}
            if len(talking) == 1 and w.speaker in mapping:
                checked += 1
                agree += mapping[w.speaker] in talking
    assert checked > 40
    assert agree >= 0.85 * checked


def test_text_follows_the_speakers_not_whispers_segments(conversation):
    """Every word has a speaker (the nearest where it falls between turns),
    each segment holds one speaker, and each line of the text is one
    speaker's run of words: consecutive lines change speaker."""
    result, _ = conversation
    words = [w for s in result.segments for w in s.words]
    assert all(w.speaker in result.speakers for w in words)
    for s in result.segments:
        assert {w.speaker for w in s.words} == {s.speaker}
    lines = result.text.splitlines()
    speakers = [line.split("] ", 1)[1].split(":", 1)[0] for line in lines]
    assert len(lines) >= 4 and set(speakers) == set(result.speakers)
    assert all(a != b for a, b in zip(speakers, speakers[1:]))
    said = " ".join(line.split(": ", 1)[1] for line in lines)
    assert said.split() == [w.word.strip() for w in words if w.word.strip()]


def test_words_between_turns_are_unknown_only_when_asked(pipeline, capsys):
    jfk = shared_file("jfk.wav")
    nearest = pipeline.process(jfk, beam_size=1, progress=True)
    drawn = capsys.readouterr().err  # tqdm.auto's bars, one per stage
    assert "jfk.wav diarization" in drawn and "jfk.wav alignment" in drawn
    asked = pipeline.process(jfk, beam_size=1, fill_nearest=False)
    assert nearest.options["fill_nearest"] is True and asked.options["fill_nearest"] is False
    assert {w.speaker for s in nearest.segments for w in s.words} == {"SPEAKER_00"}
    # Kennedy's pauses: some words lie (mostly) outside his turns
    assert "UNKNOWN" in {w.speaker for s in asked.segments for w in s.words}


def test_performance_and_progress_cover_every_stage(conversation):
    result, heard = conversation
    perf = result.performance
    assert set(perf["stages"]) == {"decode", "transcription", "diarization", "alignment"}
    for name in ("transcription", "diarization", "alignment"):
        assert perf["stages"][name]["seconds"] > 0
        assert perf["stages"][name]["peak_allocated_bytes"] > 0
    assert perf["x_realtime"] > 0 and perf["audio_seconds"] == pytest.approx(30.0, abs=0.01)
    assert perf["peak_rss_bytes"] > 0
    stages = [h[0] for h in heard]
    for stage in ("decode", "transcribe", "diarization", "alignment"):
        assert stage in stages
    for _stage, done, total in heard:
        assert 0 <= done <= total


PERFORMANCE_KEYS = {
    "audio_seconds",
    "total_seconds",
    "x_realtime",
    "stages",
    "peak_allocated_bytes",
    "peak_rss_bytes",
    "memory",
}


def test_one_shape_of_performance_for_every_call(conversation, pipeline):
    """transcribe, diarize and process report in saywho._internal.performance's shape;
    process lists the other two calls' stages as its stages' parts."""
    result, _ = conversation
    perf = result.performance
    assert set(perf) == PERFORMANCE_KEYS
    diarization = perf["stages"]["diarization"]
    assert set(diarization["stages"]) == {
        "decode",
        "segmentation",
        "embeddings",
        "clustering",
        "reconstruction",
    }
    parts = sum(p["seconds"] for p in diarization["stages"].values())
    assert 0 < parts <= diarization["seconds"] + 1e-3
    assert set(perf["stages"]["transcription"]["stages"]) == {"decode", "transcription"}
    jfk = shared_file("jfk.wav")
    _, info = pipeline.transcribe(jfk, beam_size=1)
    turns = pipeline.diarize(jfk)
    for report in (info.performance, turns.performance):
        assert set(report) == PERFORMANCE_KEYS
        assert report["audio_seconds"] == pytest.approx(11.0, abs=0.01)
        assert report["stages"]["decode"]["seconds"] > 0
        assert report["peak_allocated_bytes"] > 0
        assert report["memory"]["device"] == "cpu" and report["memory"]["total_bytes"] > 0


def test_one_stage_only(pipeline):
    jfk = shared_file("jfk.wav")
    words_only = pipeline.process(jfk, diarize=False, beam_size=1)
    assert words_only.turns is None and words_only.speakers == []
    assert all(s.speaker is None for s in words_only.segments)
    assert "ask not what your country" in words_only.text.lower()
    speakers_only = pipeline.process(jfk, transcribe=False)
    assert speakers_only.segments == [] and speakers_only.turns
    assert speakers_only.speakers == ["SPEAKER_00"]
    assert "transcription" not in speakers_only.performance["stages"]


def test_bad_requests_are_option_errors(pipeline, tmp_path):
    jfk = shared_file("jfk.wav")
    with pytest.raises(saywho.OptionError):
        pipeline.process(jfk, transcribe=False, diarize=False)
    for threshold in (1.5, "0.5", None):
        with pytest.raises(saywho.OptionError, match="threshold"):
            pipeline.process(jfk, threshold=threshold)
    with pytest.raises(saywho.OptionError):
        pipeline.process(jfk, transcribe=False, num_speakers=0)
    with saywho.Pipeline(device="cpu") as bare:
        with pytest.raises(saywho.OptionError, match="no Whisper model"):
            bare.process(jfk)
    with pytest.raises(saywho.AudioError, match="nothing.wav"):
        pipeline.process(tmp_path / "nothing.wav")


def test_written_result_reads_back(conversation, tmp_path):
    result, _ = conversation
    written = result.write(tmp_path / "out")
    assert sorted(p.name for p in written) == [
        "transcript.json",
        "transcript.rttm",
        "transcript.srt",
        "transcript.tsv",
        "transcript.txt",
        "transcript.vtt",
    ]
    back = saywho.Result.from_json(tmp_path / "out" / "transcript.json")
    assert back.speakers == result.speakers
    assert [s.text for s in back.segments] == [s.text for s in result.segments]
    assert "SPEAKER_01:" in (tmp_path / "out" / "transcript.srt").read_text()


def test_memory_comes_back_after_an_error_in_a_with_block():
    with pytest.raises(saywho.OptionError):
        with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
            p.process(shared_file("two_speakers.wav"), transcribe=False, num_speakers=2)
            assert p.memory().allocated > 0
            p.process(shared_file("two_speakers.wav"), threshold=-1.0)
    assert p.memory().allocated == 0 and p.memory().reserved == 0


def test_no_written_line_is_shorter_than_it_can_be(conversation, tmp_path):
    """Issue 39's debris: no zero-length cue in SRT or WebVTT, no RTTM turn
    under the diarization's floor, no zero-length segment in the JSON."""
    import re

    from saywho.diarization.diarize import MIN_DURATION_ON

    result, _ = conversation
    result.write(tmp_path / "out")

    def seconds(stamp: str) -> float:
        h, m, s = stamp.replace(",", ".").split(":")
        return 3600 * int(h) + 60 * int(m) + float(s)

    for name in ("transcript.srt", "transcript.vtt"):
        text = (tmp_path / "out" / name).read_text()
        cues = re.findall(r"([\d:.,]+) --> ([\d:.,]+)", text)
        assert cues
        for start, end in cues:
            assert seconds(end) > seconds(start), (name, start, end)
    rttm = (tmp_path / "out" / "transcript.rttm").read_text().splitlines()
    assert rttm and min(float(line.split()[4]) for line in rttm) >= MIN_DURATION_ON
    back = saywho.Result.from_json(tmp_path / "out" / "transcript.json")
    assert all(s.end > s.start for s in back.segments)
