"""RTTM reading and writing: the shared reference file, round trips, bad lines."""

from __future__ import annotations

import io
import os

import pytest

from saywho import _core
from saywho.formats.rttm import Turn, read_rttm, write_rttm

from .conftest import shared_file


def test_reads_shared_reference():
    turns = read_rttm(shared_file("two_speakers.rttm"))
    assert list(turns) == ["sample"]
    sample = turns["sample"]
    assert len(sample) == 10
    assert {t.speaker for t in sample} == {"speaker90", "speaker91"}
    # First line: "SPEAKER sample 1 6.690 0.430 <NA> <NA> speaker90 <NA> <NA>".
    assert sample[0] == Turn(6.69, 6.69 + 0.43, "speaker90")
    assert all(t.end >= t.start for t in sample)


def test_write_then_read_gives_the_same_turns(tmp_path):
    turns = read_rttm(shared_file("two_speakers.rttm"))["sample"]
    out = tmp_path / "copy.rttm"
    write_rttm(turns, out, "sample")
    assert read_rttm(out) == {"sample": turns}
    first = out.read_text().splitlines()[0]
    assert first == "SPEAKER sample 1 6.690 0.430 <NA> <NA> speaker90 <NA> <NA>"
    assert not [p for p in os.listdir(tmp_path) if p != "copy.rttm"]


def test_reads_open_files_skips_comments_and_other_types():
    text = (
        ";; NIST comment\n"
        "# comment\n"
        "\n"
        "SPKR-INFO a 1 <NA> <NA> <NA> unknown alice <NA> <NA>\n"
        "SPEAKER a 1 0.5 1.25 <NA> <NA> alice <NA> <NA>\n"
        "SPEAKER b 1 2 1 <NA> <NA> bob\n"  # trailing <NA>s dropped
    )
    assert read_rttm(io.StringIO(text)) == {
        "a": [Turn(0.5, 1.75, "alice")],
        "b": [Turn(2.0, 3.0, "bob")],
    }


@pytest.mark.parametrize(
    "line",
    [
        "SPEAKER a 1 0.5 1.0 <NA> <NA>",  # no speaker
        "SPEAKER a 1 zero 1.0 <NA> <NA> alice <NA> <NA>",
        "SPEAKER a 1 0.5 -1.0 <NA> <NA> alice <NA> <NA>",
        "SPEAKER a 1 nan 1.0 <NA> <NA> alice <NA> <NA>",
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, line):
    path = tmp_path / "bad.rttm"
    path.write_text("SPEAKER a 1 0 1 <NA> <NA> alice <NA> <NA>\n\n" + line + "\n")
    with pytest.raises(_core.OptionError, match=r"bad\.rttm:3:"):
        read_rttm(path)


def test_missing_file_is_an_option_error(tmp_path):
    with pytest.raises(_core.OptionError, match="nope.rttm"):
        read_rttm(tmp_path / "nope.rttm")


def test_write_refuses_fields_that_would_break_the_line(tmp_path):
    with pytest.raises(_core.OptionError, match="speaker"):
        write_rttm([Turn(0, 1, "two words")], tmp_path / "x.rttm", "a")
    with pytest.raises(_core.OptionError, match="uri"):
        write_rttm([Turn(0, 1, "s")], tmp_path / "x.rttm", "")
    with pytest.raises(_core.OptionError):
        write_rttm([Turn(2, 1, "s")], tmp_path / "x.rttm", "a")
    assert os.listdir(tmp_path) == []


def test_failed_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    out = tmp_path / "out.rttm"
    write_rttm([Turn(0, 1, "old")], out, "a")
    before = out.read_bytes()

    def broken_replace(src, dst):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk gone"):
        write_rttm([Turn(0, 2, "new")], out, "a")
    assert out.read_bytes() == before
    assert os.listdir(tmp_path) == ["out.rttm"]
