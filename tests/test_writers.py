"""Transcript writers: exact SRT/VTT/TXT text, JSON round trip, atomic files."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import saywho
from saywho import writers
from saywho.rttm import Turn, read_rttm


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
    assert writers.vtt(SEGMENTS[:1]) == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.200\nSPEAKER_00: Hello there.\n"
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
