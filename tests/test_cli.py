"""The saywho command, run as a user would: exit codes and written files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from saywho.models.test_weights import test_model_dir

from .conftest import shared_file


def run(*args, cwd):
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-m", "saywho", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_transcribes_and_writes_the_chosen_formats(tmp_path):
    jfk = shared_file("jfk.flac")
    model = str(test_model_dir("tiny.en"))
    out = tmp_path / "out"
    proc = run(
        str(jfk),
        "--model",
        model,
        "--beam-size",
        "1",
        "-o",
        str(out),
        "--format",
        "srt",
        "--format",
        "json",
        "--word-timestamps",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ask not what your country can do for you" in proc.stdout
    assert sorted(p.name for p in (out / "jfk").iterdir()) == ["transcript.json", "transcript.srt"]
    assert (out / "jfk" / "transcript.srt").read_text().startswith("1\n00:00:00,000 --> ")
    record = json.loads((out / "jfk" / "transcript.json").read_text())
    words = [w["word"].strip() for s in record["segments"] for w in s["words"]]
    assert words[:3] == ["And", "so", "my"] or words[:3] == ["And", "so,", "my"]
    assert record["metadata"]["options"]["word_timestamps"] is True


def test_a_bad_file_fails_alone_with_exit_code_1(tmp_path):
    bad = tmp_path / "broken.wav"
    bad.write_bytes(b"RIFF....WAVEjunk")
    proc = run(
        str(bad),
        str(shared_file("jfk.wav")),
        "--model",
        str(test_model_dir("tiny.en")),
        "--beam-size",
        "1",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "broken.wav" in proc.stderr
    assert "ask not what your country" in proc.stdout


def test_usage_errors_exit_with_2(tmp_path):
    assert run("--format", "docx", cwd=tmp_path).returncode == 2
    assert run("--device", "tpu", cwd=tmp_path).returncode == 2
