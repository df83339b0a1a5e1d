"""Hostile input names: every output lies inside the output folder, no two
inputs share a folder, nothing is overwritten (issue 32).

Several hundred generated names, as real files in several folders, each
written through Result.write(per_input=True); a handful of them through the
CLI on real speech; a symlink planted where a folder would go.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

import saywho
from saywho.formats.output_names import MAX_STEM_BYTES, output_dir, output_name, safe_stem

from .conftest import shared_file
from .weights import test_model_dir

STEMS = [
    "",
    ".",
    "..",
    "...",
    "....",
    "a..b",
    "..a",
    "a..",
    "-rf",
    "--help",
    "-",
    " ",
    "  lead and trail  ",
    ".hidden",
    "line\nbreak",
    "tab\there",
    "cr\rlf",
    "bell\x07",
    "esc\x1b[31m",
    "del\x7f",
    "c1\x85\x9b",
    "bidi\u202eevil",
    "zero\u200bwidth",
    "a" * 240,
    "é" * 120,
    "中" * 80,
    "talk",
    "Talk",
    "TALK",
    "interview 2024-01-05",
    "Ünïcødé",
    "Ελληνικά",
    "русский",
    "العربية",
    "עברית",
    "日本語の会議",
    "한국어",
    "हिन्दी",
    "🎙️ podcast",
    "con",
    "NUL",
    "a:b",
    'q"uote',
    "star*",
    "back\\slash",
    "%2e%2e",
    "$HOME",
    "~",
]
EXTENSIONS = ["", ".wav", ".flac", ".", ".WAV", ".tar.gz"]
FOLDERS = ["a", "b", "a/b", "dot..dot", "-dash"]


def _names() -> list[str]:
    names = set()
    for stem, ext in itertools.product(STEMS, EXTENSIONS):
        name = stem + ext
        if name in ("", ".", ".."):  # not a file name on any system
            continue
        if len(name.encode()) > 250:  # ext4's limit is 255 bytes
            name = name.encode()[:250].decode(errors="ignore")
        names.add(name)
    return sorted(names)


def _check_name(name: str) -> None:
    assert name and name not in (".", "..")
    assert "/" not in name and "\\" not in name and "\0" not in name
    assert not name.startswith(("-", ".", " "))
    assert not any(unicodedata.category(c)[0] == "C" for c in name), repr(name)
    assert len(name.encode()) <= 255


def test_several_hundred_hostile_names_stay_inside_and_apart(tmp_path):
    inputs = []
    for folder in FOLDERS:
        (tmp_path / "in" / folder).mkdir(parents=True, exist_ok=True)
        for name in _names():
            path = tmp_path / "in" / folder / name
            path.write_bytes(b"")
            inputs.append(path)
    assert len(inputs) > 1000
    out = tmp_path / "out" / "inner"
    out.mkdir(parents=True)
    folders = {}
    for path in inputs:
        result = saywho.Result(source=str(path), duration=1.0, language="en")
        written = result.write(out, formats=["json", "txt"], per_input=True)
        folder = written[0].parent
        _check_name(folder.name)
        assert folder.parent == out
        assert os.path.realpath(folder).startswith(os.path.realpath(out) + os.sep)
        assert folder not in folders, f"{path!r} and {folders[folder]!r} share {folder}"
        folders[folder] = path
    # nothing outside the folder, nothing overwritten: each transcript still
    # names the input that wrote it
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["inner"]
    assert len(list(out.iterdir())) == len(inputs)
    for folder, path in folders.items():
        assert sorted(p.name for p in folder.iterdir()) == ["transcript.json", "transcript.txt"]
        record = json.loads((folder / "transcript.json").read_text())
        assert record["metadata"]["source"] == str(path)


def test_names_that_are_not_files_anywhere_still_name_safely():
    # NUL, 300-byte and 900-byte names, undecodable bytes, separators only
    for source in [
        "a\0b.wav",
        "x" * 300,
        "é" * 450 + ".wav",
        b"caf\xe9.wav",
        "///",
        "..//..",
        "\\",
    ]:
        name = output_name(source)
        _check_name(name)
        assert len(safe_stem(source).encode()) <= MAX_STEM_BYTES


def test_same_input_same_folder_and_neighbours_differ(tmp_path):
    a, b = tmp_path / "a" / "talk.wav", tmp_path / "b" / "talk.wav"
    assert output_dir(tmp_path, a) == output_dir(tmp_path, a)  # a rerun writes where it did
    assert output_dir(tmp_path, a) != output_dir(tmp_path, b)
    assert output_dir(tmp_path, a) != output_dir(tmp_path, a.with_suffix(".flac"))
    assert output_dir(tmp_path, a).name.startswith("talk-")
    # relative and absolute spellings of one input are one input
    assert output_dir(tmp_path, os.path.relpath(a)) == output_dir(tmp_path, a)


def test_a_planted_symlink_is_an_error_that_names_the_input(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    outside.mkdir()
    source = tmp_path / "talk.wav"
    (out / output_name(source)).symlink_to(outside)
    result = saywho.Result(source=str(source), duration=1.0)
    with pytest.raises(saywho.OptionError, match="talk.wav"):
        result.write(out, per_input=True)
    assert list(outside.iterdir()) == []


def test_a_result_of_samples_has_no_per_input_folder(tmp_path):
    with pytest.raises(saywho.OptionError, match="samples"):
        saywho.Result(duration=1.0).write(tmp_path, per_input=True)


CLI_NAMES = ["...flac", "..flac", "-rf.wav", "new\nline.wav", "中文 会议.wav", "talk.flac"]


def test_the_cli_keeps_hostile_names_inside_and_apart(tmp_path):
    """Real speech through the CLI: the names of issue 32's report, a newline,
    a non-Latin script, and one stem in two folders and two extensions."""
    jfk = shared_file("jfk.wav")
    inputs = []
    for name in CLI_NAMES:
        inputs.append(tmp_path / "in" / name)
    inputs += [tmp_path / "in" / "a" / "talk.wav", tmp_path / "in" / "b" / "talk.wav"]
    for path in inputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(jfk, path)
    out = tmp_path / "out" / "inner"
    proc = subprocess.run(
        [sys.executable, "-m", "saywho", "--model", str(test_model_dir("tiny.en"))]
        + ["--beam-size", "1", "--no-speakers", "-q", "-o", str(out), "--"]
        + [str(p) for p in inputs],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["inner"]
    folders = sorted(out.iterdir())
    assert len(folders) == len(inputs)
    for path in inputs:
        folder = output_dir(out, path)
        _check_name(folder.name)
        record = json.loads((folder / "transcript.json").read_text())
        assert record["metadata"]["source"] == str(path)
        assert "ask not what your country" in record["segments"][0]["text"].lower() or any(
            "ask not" in s["text"].lower() for s in record["segments"]
        )
        assert f"{path} -> {folder}" in proc.stdout
    assert not any(Path(tmp_path / "out").glob("transcript.*"))
