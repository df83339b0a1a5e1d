"""saywho batch on one machine, run as a user would: the index, resume,
isolation of bad files, Ctrl-C, and the same answers as Pipeline.process."""

from __future__ import annotations

import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from saywho import OptionError, Pipeline
from saywho.formats.writers import FORMATS
from saywho.service.batch import expand_inputs
from saywho.service.batch.index import read_index

from .batch_corpus import CORRUPT, make_corpus, run_batch_command, transcript, words
from .conftest import batch_options
from .weights import test_model_dir

SUMMARY = r"(\d+) done now, (\d+) done before or skipped, (\d+) errors now"


def batch(*args, cwd, check_rc=None):
    proc = run_batch_command(*args, cwd=cwd)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stdout + proc.stderr
    return proc


def test_inputs_are_files_folders_globs_and_manifests(tmp_path):
    files = make_corpus(tmp_path / "c", count=7)
    (tmp_path / "c" / "notes.md").write_text("not audio")
    found = [i.path for i in expand_inputs([str(tmp_path / "c")])]
    assert sorted(found) == sorted(str(f) for f in files)  # recursive, by extension
    glob = expand_inputs([str(tmp_path / "c" / "a" / "*.wav"), str(files[0])])
    assert len(glob) == len({i.path for i in glob}) == 2  # a file named twice runs once
    (tmp_path / "list.txt").write_text("# a comment\nc/a/cut00.wav\n\nc/b/cut00.wav\n")
    (tmp_path / "m.csv").write_text(
        "path,num_speakers,language\nc/a/cut00.wav,2,en\nc/b/cut00.wav,,\n"
    )
    (tmp_path / "m.jsonl").write_text('{"path": "c/a/cut00.wav", "num_speakers": 3}\n')
    assert [
        Path(i.path).relative_to(tmp_path).as_posix()
        for i in expand_inputs([str(tmp_path / "list.txt")])
    ] == [
        "c/a/cut00.wav",
        "c/b/cut00.wav",
    ]
    csv_items = expand_inputs([str(tmp_path / "m.csv")])
    assert [i.overrides() for i in csv_items] == [{"num_speakers": 2, "language": "en"}, {}]
    assert expand_inputs([str(tmp_path / "m.jsonl")])[0].overrides() == {"num_speakers": 3}
    (tmp_path / "bad.csv").write_text("path,num_speakers\nc/a/cut00.wav,two\n")
    with pytest.raises(OptionError, match=r"bad\.csv:2: num_speakers 'two'"):
        expand_inputs([str(tmp_path / "bad.csv")])
    with pytest.raises(OptionError, match="no such file"):
        expand_inputs([str(tmp_path / "missing.wav")])
    with pytest.raises(OptionError, match="matches no file"):
        expand_inputs([str(tmp_path / "*.flac")])


def test_a_folder_with_a_corrupt_file_gives_an_index_of_every_file(batch_corpus, local_batch):
    root, files = batch_corpus
    out, _, proc = local_batch
    assert proc.returncode == 1, proc.stderr  # one file is an error
    records = read_index(out)
    assert sorted(r.path for r in records) == sorted(str(f) for f in files)
    lines = (out / "index.jsonl").read_text().splitlines()
    assert len(lines) == len(files) == 24
    (bad,) = [r for r in records if r.status == "error"]
    assert bad.path == str(root / CORRUPT)
    assert "AudioError" in bad.error and "corrupt.wav" in bad.error
    folders = set()
    for r in records:
        if r.status != "ok":
            continue
        assert r.duration > 2 and r.seconds > 0 and r.x_realtime > 0
        # a cut of the conversation's first seconds holds no speech: no language, no one
        assert r.language == "en" if r.speakers else r.language is None
        assert {Path(p).suffix for p in r.outputs} == {f".{f}" for f in FORMATS}
        assert all((out / p).is_file() for p in r.outputs)
        assert transcript(out, r)["metadata"]["source"] == r.path
        folders.add(Path(r.outputs[0]).parent)
    assert len(folders) == 23  # a/cut00.wav and b/cut00.wav do not collide
    assert not list(out.rglob("*.tmp"))
    two_voices = [r for r in records if r.status == "ok" and len(r.speakers) == 2]
    assert two_voices, "the two-speaker cuts should find two voices"
    # one progress line per file off a terminal, with the audio done and an ETA
    progress = [line for line in proc.stderr.splitlines() if "min of audio" in line]
    assert len(progress) == 24 and "ETA" in progress[-1] and "100%" in progress[-1]
    assert "23 done now" in proc.stdout and "1 in the index" in proc.stdout


def test_the_outputs_are_pipeline_process_per_file(batch_corpus, local_batch):
    root, files = batch_corpus
    out, _, _ = local_batch
    records = {r.path: r for r in read_index(out)}
    with Pipeline(model=test_model_dir("tiny.en"), threads=1, log_memory=False) as pipeline:
        for f in files[:4]:
            expected = pipeline.process(f, beam_size=1, word_timestamps=True).to_dict()
            assert words(transcript(out, records[str(f)])) == words(expected), f
            assert (
                transcript(out, records[str(f)])["metadata"]["speakers"]
                == expected["metadata"]["speakers"]
            )


def test_running_again_redoes_nothing_and_retry_failed_redoes_the_errors(local_batch):
    out, args, _ = local_batch
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("transcript.*")}
    proc = batch(*args, cwd=out.parent, check_rc=1)
    assert "0 done now, 24 done before or skipped, 0 errors now (1 in the index)" in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("transcript.*")} == stamps
    proc = batch(*args, "--retry-failed", cwd=out.parent, check_rc=1)
    assert "0 done now, 23 done before or skipped, 1 errors now" in proc.stdout
    assert {p: p.stat().st_mtime_ns for p in out.rglob("transcript.*")} == stamps
    assert len((out / "index.jsonl").read_text().splitlines()) == 24


def test_a_partial_output_or_a_torn_index_line_is_not_done(local_batch):
    out, args, _ = local_batch
    records = [r for r in read_index(out) if r.status == "ok"]
    # a file whose transcript went missing, as after a crash before its rename
    (out / records[0].outputs[1]).unlink()
    # a file whose index line was torn by a kill in the middle of its write
    lines = (out / "index.jsonl").read_text().splitlines(keepends=True)
    torn = next(i for i, line in enumerate(lines) if json.loads(line)["path"] == records[1].path)
    kept = lines[:torn] + lines[torn + 1 :] + [lines[torn][: len(lines[torn]) // 2]]
    (out / "index.jsonl").write_text("".join(kept))
    untouched = out / records[2].outputs[0]
    stamp = untouched.stat().st_mtime_ns
    proc = batch(*args, cwd=out.parent, check_rc=1)
    assert "2 done now, 22 done before or skipped" in proc.stdout
    assert untouched.stat().st_mtime_ns == stamp
    after = read_index(out)
    assert len(after) == 24 and len({r.path for r in after}) == 24
    assert all((out / p).is_file() for r in after for p in r.outputs)
    assert len((out / "index.jsonl").read_text().splitlines()) == 24


def test_a_manifest_sets_options_per_file(local_batch, tmp_path):
    local_out, _, _ = local_batch
    done = [r for r in read_index(local_out) if r.status == "ok"]
    two = [r.path for r in done if len(r.speakers) == 2][:2]
    (tmp_path / "files.jsonl").write_text(
        json.dumps({"path": two[0], "num_speakers": 1}) + "\n" + json.dumps({"path": two[1]}) + "\n"
    )
    out = tmp_path / "out"
    batch(
        str(tmp_path / "files.jsonl"),
        "-o",
        str(out),
        *batch_options(),
        "-q",
        cwd=tmp_path,
        check_rc=0,
    )
    speakers = {r.path: r.speakers for r in read_index(out)}
    assert speakers == {two[0]: ["SPEAKER_00"], two[1]: ["SPEAKER_00", "SPEAKER_01"]}


def test_ctrl_c_stops_cleanly_and_the_same_command_goes_on(tmp_path):
    files = make_corpus(tmp_path / "c", count=8)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "saywho", "batch", str(tmp_path / "c"), "-o", str(out)]
    args += [*batch_options(), "--no-speakers", "-q"]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as at a terminal: a test run in the background inherits SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    index = out / "index.jsonl"
    deadline = time.monotonic() + 300
    while not (index.exists() and index.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    first = read_index(out)
    assert 2 <= len(first) < 8
    assert len(index.read_text().splitlines()) == len(first)  # every line whole
    assert all((out / p).is_file() for r in first for p in r.outputs)
    assert not list(out.rglob("*.tmp"))
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("transcript.*")}
    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.returncode == 1, again.stderr  # the corrupt file
    done_now, before, errors_now = map(int, re.search(SUMMARY, again.stdout).groups())
    assert done_now + errors_now == 8 - len(first) and before == len(first)
    after = read_index(out)
    assert sorted(r.path for r in after) == sorted(str(f) for f in files)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # the done ones not redone


def test_usage_errors(tmp_path):
    jfk = str(tmp_path / "missing.wav")
    assert batch(jfk, cwd=tmp_path).returncode == 2  # no -o
    proc = batch(jfk, "-o", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 2 and "missing.wav: no such file" in proc.stderr
    assert batch(jfk, "-o", "o", "--actors", "2", cwd=tmp_path).returncode == 2
    assert batch(jfk, "-o", "o", "--num-speakers", "0", cwd=tmp_path).returncode == 2
    assert "ray" not in sys.modules  # saywho batch without --ray needs no Ray
    env = dict(os.environ)
    check = "import saywho, saywho.service.batch, saywho.cli.main, sys; print('ray' in sys.modules)"
    assert (
        subprocess.run(
            [sys.executable, "-c", check], capture_output=True, text=True, env=env
        ).stdout.strip()
        == "False"
    )


def _riff(fmt_tag: int, bits: int, payload: bytes, rate: int = 16000) -> bytes:
    """A one-channel WAV with the given fmt tag (1 PCM, 3 IEEE float), and a
    LIST chunk before the data, as editors write it."""
    block = bits // 8
    fmt = struct.pack("<HHIIHH", fmt_tag, 1, rate, rate * block, block, bits)
    listing = b"INFOISFT" + struct.pack("<I", 6) + b"saywho"
    chunks = (
        b"fmt " + struct.pack("<I", len(fmt)) + fmt
        + b"LIST" + struct.pack("<I", len(listing)) + listing
        + b"data" + struct.pack("<I", len(payload)) + payload
    )  # fmt: skip
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def test_batch_progress_reads_a_float_wavs_duration(tmp_path, jfk_wav):
    """saywho batch's ETA: a 32-bit float WAV's duration from its header, not
    guessed from its size (which made it 4x as long)."""
    import saywho
    from saywho.cli.total_progress import estimated_duration

    samples = saywho.load_audio(jfk_wav)
    seconds = len(samples) / saywho.SAMPLE_RATE
    as_float = tmp_path / "float32.wav"
    as_float.write_bytes(_riff(3, 32, samples.astype("<f4").tobytes()))
    as_int = tmp_path / "int16.wav"
    as_int.write_bytes(_riff(1, 16, (samples * 32767).astype("<i2").tobytes()))
    assert estimated_duration(str(as_float)) == pytest.approx(seconds, abs=1e-3)
    assert estimated_duration(str(as_int)) == pytest.approx(seconds, abs=1e-3)
    # the file decodes to the same samples: the header written is a real WAV
    assert len(saywho.load_audio(as_float)) == len(samples)
