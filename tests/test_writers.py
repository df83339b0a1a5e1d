"""Transcript writers and Result: exact SRT/VTT/TXT text, JSON round trip,
unicode, empty results, atomic files."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

import saywho
from saywho.api.result import Result
from saywho.api.speaker_words import SpeakerSegment, SpeakerWord
from saywho.formats import writers
from saywho.formats.rttm import Turn, read_rttm


@dataclass
class Seg:
    start: float
    end: float
    text: str
    speaker: str | None = None


SEGMENTS = [
    Seg(0.0, 1.2, " Hello there.", "SPEAKER_00"),
    Seg(1.2, 3.4567, " How are you?", "SPEAKER_00"),
    Seg(3.5, 3661.25, " Fine, thanks — ça va.", "SPEAKER_01"),
]


def test_srt_text():
    assert writers.srt(SEGMENTS) == (
        "1\n00:00:00,000 --> 00:00:01,200\nSPEAKER_00: Hello there.\n\n"
        "2\n00:00:01,200 --> 00:00:03,457\nSPEAKER_00: How are you?\n\n"
        "3\n00:00:03,500 --> 01:01:01,250\nSPEAKER_01: Fine, thanks — ça va.\n"
    )


def test_vtt_text():
    # the speaker is a WebVTT voice tag, which players style and name
    assert writers.vtt(SEGMENTS[:1]) == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.200\n<v SPEAKER_00>Hello there.\n"
    )


def test_txt_groups_by_speaker_turn():
    assert writers.txt(SEGMENTS) == (
        "[00:00:00.000 - 00:00:03.457] SPEAKER_00: Hello there. How are you?\n"
        "[00:00:03.500 - 01:01:01.250] SPEAKER_01: Fine, thanks — ça va.\n"
    )


def test_without_speakers_there_are_no_labels():
    plain = [Seg(0.0, 1.0, " Just text.")]
    assert writers.srt(plain) == "1\n00:00:00,000 --> 00:00:01,000\nJust text.\n"
    assert writers.txt(plain) == "[00:00:00.000 - 00:00:01.000] Just text.\n"
    assert writers.txt([]) == ""


def test_write_all_and_read_back(tmp_path):
    turns = [Turn(0.0, 3.4567, "SPEAKER_00"), Turn(3.5, 3661.25, "SPEAKER_01")]
    meta = {"source": "talk.m4a", "duration": 3661.25, "speakers": ["SPEAKER_00", "SPEAKER_01"]}
    paths = writers.write_all(tmp_path, SEGMENTS, meta, turns=turns, performance={"total_s": 1.5})
    assert [p.name for p in paths] == [f"transcript.{f}" for f in writers.FORMATS]
    record = json.loads((tmp_path / "transcript.json").read_text(encoding="utf-8"))
    assert record["metadata"] == meta
    assert record["performance"] == {"total_s": 1.5}
    assert record["segments"][2]["text"] == " Fine, thanks — ça va."
    assert read_rttm(tmp_path / "transcript.rttm")["talk"] == [
        Turn(0.0, 3.457, "SPEAKER_00"),
        Turn(3.5, 3661.25, "SPEAKER_01"),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_a_failing_writer_leaves_no_file(tmp_path, monkeypatch):
    def boom(segments):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writers, "vtt", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        writers.write_all(tmp_path, SEGMENTS, {"source": "x.wav"})
    # formats before the failure are whole; nothing of vtt, no temporary files
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "transcript.json",
        "transcript.srt",
        "transcript.txt",
    ]


def test_a_failing_rename_leaves_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "transcript.txt"
    target.write_text("old\n")

    def no_replace(src, dst):
        raise OSError("no space left")

    monkeypatch.setattr(writers.os, "replace", no_replace)
    with pytest.raises(OSError):
        writers.write_all(tmp_path, SEGMENTS, {}, formats=["txt"])
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["transcript.txt"]


@pytest.mark.parametrize("formats", [["docx"], ["srt", "pdf"]])
def test_unknown_format_is_an_option_error(tmp_path, formats):
    with pytest.raises(saywho.OptionError, match="choose from"):
        writers.write_all(tmp_path, SEGMENTS, {}, formats=formats)


def test_rttm_without_turns_is_an_option_error(tmp_path):
    with pytest.raises(saywho.OptionError, match="speaker turns"):
        writers.write_all(tmp_path, SEGMENTS, {}, formats=["rttm"])


# --- Result ---------------------------------------------------------------------


def _result(**overrides) -> Result:
    words_a = [
        SpeakerWord(1.2, 1.6, " Grüß", 0.91, "SPEAKER_00"),
        SpeakerWord(1.6, 2.0, " Gott!", 0.88, "SPEAKER_00"),
    ]
    fields = dict(
        source="interview 1.m4a",
        duration=12.5,
        language="de",
        segments=[
            SpeakerSegment(1.2, 2.0, " Grüß Gott!", "SPEAKER_00", words_a),
            SpeakerSegment(2.0, 7.4, " Wie geht's?", "SPEAKER_00"),
            SpeakerSegment(8.05, 9.999, " 很好，谢谢。", "SPEAKER_01"),
            SpeakerSegment(10.0, 11.0, " hm", "UNKNOWN"),
        ],
        speakers=["SPEAKER_00", "SPEAKER_01"],
        turns=[Turn(1.0, 7.5, "SPEAKER_00"), Turn(8.0, 10.0, "SPEAKER_01")],
        models={"whisper": "large-v3", "segmentation": "pyannote/segmentation-3.0"},
        options={"beam_size": 5, "num_speakers": 2},
        performance={"total_s": 2.5, "x_realtime": 5.0, "peak_bytes": 123, "bad": float("inf")},
        processed_at="2026-11-22T10:00:00+00:00",
    )
    fields.update(overrides)
    return Result(**fields)


def test_result_files_exact_text(tmp_path):
    paths = _result().write(tmp_path)
    assert [p.name for p in paths] == [f"transcript.{f}" for f in writers.FORMATS]
    read = {p.suffix[1:]: p.read_text(encoding="utf-8") for p in paths}
    assert read["txt"] == (
        "[00:00:01.200 - 00:00:07.400] SPEAKER_00: Grüß Gott! Wie geht's?\n"
        "[00:00:08.050 - 00:00:09.999] SPEAKER_01: 很好，谢谢。\n"
        "[00:00:10.000 - 00:00:11.000] UNKNOWN: hm\n"
    )
    assert read["srt"] == (
        "1\n00:00:01,200 --> 00:00:02,000\nSPEAKER_00: Grüß Gott!\n\n"
        "2\n00:00:02,000 --> 00:00:07,400\nSPEAKER_00: Wie geht's?\n\n"
        "3\n00:00:08,050 --> 00:00:09,999\nSPEAKER_01: 很好，谢谢。\n\n"
        "4\n00:00:10,000 --> 00:00:11,000\nUNKNOWN: hm\n"
    )
    assert read["vtt"] == (
        "WEBVTT\n\n"
        "00:00:01.200 --> 00:00:02.000\n<v SPEAKER_00>Grüß Gott!\n\n"
        "00:00:02.000 --> 00:00:07.400\n<v SPEAKER_00>Wie geht's?\n\n"
        "00:00:08.050 --> 00:00:09.999\n<v SPEAKER_01>很好，谢谢。\n\n"
        "00:00:10.000 --> 00:00:11.000\n<v UNKNOWN>hm\n"
    )
    # Whisper's TSV (milliseconds), the speaker a fourth column
    assert read["tsv"] == (
        "start\tend\ttext\tspeaker\n"
        "1200\t2000\tGrüß Gott!\tSPEAKER_00\n"
        "2000\t7400\tWie geht's?\tSPEAKER_00\n"
        "8050\t9999\t很好，谢谢。\tSPEAKER_01\n"
        "10000\t11000\thm\tUNKNOWN\n"
    )
    # the uri is the source's name, its space made safe for RTTM's fields
    assert read["rttm"] == (
        "SPEAKER interview_1 1 1.000 6.500 <NA> <NA> SPEAKER_00 <NA> <NA>\n"
        "SPEAKER interview_1 1 8.000 2.000 <NA> <NA> SPEAKER_01 <NA> <NA>\n"
    )
    assert read_rttm(tmp_path / "transcript.rttm")["interview_1"] == _result().turns
    record = json.loads(read["json"])
    meta = record["metadata"]
    assert meta["source"] == "interview 1.m4a"
    assert meta["speakers"] == ["SPEAKER_00", "SPEAKER_01"]
    assert meta["models"]["whisper"] == "large-v3"
    assert meta["saywho_version"] == saywho.__version__
    assert meta["versions"]["saywho"] == saywho.__version__
    assert meta["processed_at"] == "2026-11-22T10:00:00+00:00"
    assert record["performance"]["bad"] is None  # JSON has no infinity
    assert record["segments"][0]["words"][1] == {
        "start": 1.6,
        "end": 2.0,
        "word": " Gott!",
        "probability": 0.88,
        "speaker": "SPEAKER_00",
    }
    assert "很好" in read["json"]  # UTF-8, not \u escapes


def test_result_json_round_trip(tmp_path):
    result = _result(performance={"total_s": 2.5})
    result.write(tmp_path, formats=["json"])
    assert Result.from_json(tmp_path / "transcript.json") == result
    assert Result.from_dict(result.to_dict()) == result
    # without diarization: no turns, no RTTM by default
    plain = _result(turns=None, speakers=[], performance={})
    paths = plain.write(tmp_path / "plain")
    assert [p.suffix for p in paths] == [".json", ".txt", ".srt", ".vtt", ".tsv"]
    assert Result.from_json(paths[0]) == plain


def test_processed_at_is_utc_iso_and_versions_are_filled():
    result = Result()
    stamp = datetime.fromisoformat(result.processed_at)
    assert stamp.utcoffset() == timedelta(0)
    assert result.versions["saywho"] == saywho.__version__


def test_empty_result(tmp_path):
    Result(source="silence.wav", duration=3.0, turns=[]).write(tmp_path)
    read = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert read["transcript.txt"] == ""
    assert read["transcript.srt"] == ""
    assert read["transcript.vtt"] == "WEBVTT\n\n"
    assert read["transcript.rttm"] == ""
    record = json.loads(read["transcript.json"])
    assert record["segments"] == [] and record["turns"] == []
    assert record["metadata"]["duration"] == 3.0


def test_txt_without_speakers_keeps_a_line_per_segment():
    plain = [Seg(0.0, 1.0, " One."), Seg(1.0, 2.0, " Two.")]
    assert writers.txt(plain) == (
        "[00:00:00.000 - 00:00:01.000] One.\n[00:00:01.000 - 00:00:02.000] Two.\n"
    )


def test_a_write_failing_half_way_leaves_no_half_file(tmp_path, monkeypatch):
    real_fdopen = writers.os.fdopen

    class HalfWriter:
        """Writes half of what it is given, then the disk fills up."""

        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, text):
            if text.startswith("WEBVTT"):
                self.f.write(text[: len(text) // 2])
                self.f.flush()
                raise OSError(28, "No space left on device")
            return self.f.write(text)

        def __getattr__(self, name):
            return getattr(self.f, name)

    monkeypatch.setattr(writers.os, "fdopen", lambda *a, **k: HalfWriter(real_fdopen(*a, **k)))
    with pytest.raises(OSError, match="No space"):
        _result().write(tmp_path)
    # json, txt and srt came before vtt and are whole; nothing of vtt or rttm
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "transcript.json",
        "transcript.srt",
        "transcript.txt",
    ]
    assert Result.from_json(tmp_path / "transcript.json") == _result(
        performance={**_result().performance, "bad": None}
    )


def test_files_get_the_mode_of_a_plain_open(tmp_path):
    old = os.umask(0o022)
    try:
        path = writers.write_atomic(tmp_path / "x.txt", lambda: "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_format_names(tmp_path):
    assert [p.name for p in _result().write(tmp_path, formats="srt")] == ["transcript.srt"]
    paths = _result().write(tmp_path, formats=["vtt", "txt", "vtt"])
    assert [p.name for p in paths] == ["transcript.vtt", "transcript.txt"]
    with pytest.raises(saywho.OptionError, match="json, txt, srt, vtt, tsv, rttm"):
        _result().write(tmp_path, formats=["docx"])
    with pytest.raises(saywho.OptionError, match="speaker turns"):
        _result(turns=None).write(tmp_path, formats=["rttm"])
