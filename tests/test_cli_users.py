"""What a new user (or one coming from WhisperX or faster-whisper) meets on
the command line, run as they run it: every transcription option as a flag,
WhisperX's spellings, refusals before any audio is read, clean JSON times,
subtitle widths that count the speaker label, honest progress and messages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from saywho._internal.device import gpu_present
from saywho.api.result import Result
from saywho.cli.main import build_parser
from saywho.cli.options import process_kwargs, write_kwargs
from saywho.formats.output_names import output_dir
from saywho.whisper.options import flag_name, flagged

from .conftest import shared_file
from .weights import test_model_dir

STAGE_WORDS = ("decode", "diarization", "transcribe", "alignment")


def run(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "saywho", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=300,
    )


def tiny() -> list[str]:
    return ["--model", str(test_model_dir("tiny.en"))]


def test_help_has_examples_the_subcommands_and_every_option(tmp_path):
    proc = run("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "examples:" in text and "saywho serve" in text and "saywho batch" in text
    for f in flagged():
        assert flag_name(f) in text, f.name
    for flag in ("--initial-prompt", "--hotwords", "--task", "--temperature", "--format"):
        assert flag in text


def test_whisperx_spellings_are_the_same_flags():
    args = build_parser().parse_args(
        [
            "--min_speakers",
            "2",
            "--max_speakers",
            "4",
            "--output_format",
            "all",
            "--output_dir",
            "out",
            "--initial_prompt",
            "Fourier and Laplace.",
            "--condition_on_previous_text",
            "False",
            "--logprob_threshold",
            "-0.5",
            "--temperature",
            "0,0.2,0.4",
            "--suppress_tokens",
            "-1",
            "--vad_filter",
            "True",
            "--highlight_words",
            "True",
            "--max_line_width",
            "42",
            "--compute_type",
            "int8",
            "--task",
            "translate",
            "--best_of",
            "3",
        ]
    )
    assert (args.min_speakers, args.max_speakers, args.output_dir) == (2, 4, "out")
    kwargs = process_kwargs(args)
    assert kwargs["initial_prompt"] == "Fourier and Laplace."
    assert kwargs["condition_on_previous_text"] is False
    assert kwargs["log_prob_threshold"] == -0.5
    assert kwargs["temperature"] == (0.0, 0.2, 0.4)
    assert "suppress_tokens" not in kwargs  # (-1,) is the default: not passed
    assert kwargs["vad"] is True and kwargs["task"] == "translate" and kwargs["best_of"] == 3
    assert args.compute_type == "int8"
    assert write_kwargs(args) == {
        "formats": None,  # all: every format the run allows
        "max_line_width": 42,
        "max_line_count": None,
        "highlight_words": True,
    }
    # the dashed spellings land in the same places
    dashed = build_parser().parse_args(["--no-condition-on-previous-text", "--format", "all"])
    assert dashed.condition_on_previous_text is False and write_kwargs(dashed)["formats"] is None


def test_transcription_flags_reach_whisper_and_json_times_are_rounded(tmp_path):
    """--temperature, --initial-prompt, --hotwords, --output_format all, run
    on jfk: the options are in the transcript, every format a speakerless
    run allows is written, and no time in the JSON carries float noise."""
    jfk = shared_file("jfk.flac")
    out = tmp_path / "out"
    proc = run(
        str(jfk),
        *tiny(),
        "--no-speakers",
        "--beam-size",
        "1",
        "--temperature",
        "0",
        "--initial-prompt",
        "President Kennedy's inaugural address.",
        "--hotwords",
        "Americans",
        "--word_timestamps",
        "true",
        "--output_format",
        "all",
        "-o",
        str(out),
        "-q",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ask not what your country" in proc.stdout.lower()
    folder = output_dir(out, jfk)
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"transcript.{f}" for f in ("json", "srt", "tsv", "txt", "vtt")]
    record = json.loads((folder / "transcript.json").read_text())
    options = record["metadata"]["options"]
    assert options["temperature"] == 0.0 and options["beam_size"] == 1
    assert options["initial_prompt"] == "President Kennedy's inaugural address."
    assert options["hotwords"] == "Americans"
    times = [t for s in record["segments"] for t in (s["start"], s["end"])]
    times += [t for s in record["segments"] for w in s["words"] for t in (w["start"], w["end"])]
    assert len(times) > 20
    for t in times:
        assert t == round(t, 3) and len(repr(t)) <= len(repr(round(t, 3))), t
    # the short repr: what, how long, how many speakers and segments
    result = Result.from_json(folder / "transcript.json")
    shown = repr(result)
    assert len(shown) < 120, shown
    assert "jfk.flac" in shown and "11.0 s" in shown
    assert f"{len(result.segments)} segments" in shown and "no diarization" in shown


def _no_stage_ran(proc) -> None:
    for word in STAGE_WORDS:
        assert word + " done" not in proc.stderr
    assert "of audio in" not in proc.stdout  # the summary of a run that happened


def test_refusals_come_before_any_audio_is_read(tmp_path):
    jfk = shared_file("jfk.flac")
    out = tmp_path / "out"
    # a format the options cannot give
    proc = run(str(jfk), *tiny(), "--no-speakers", "--format", "rttm", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    assert "rttm" in proc.stderr and "usage:" in proc.stderr
    _no_stage_ran(proc)
    assert not out.exists()
    # an unsafe output folder: a symlink planted where the input's folder goes
    out.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    output_dir(out, jfk).symlink_to(outside)
    proc = run(str(jfk), *tiny(), "--no-speakers", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 2
    assert "outside" in proc.stderr and "jfk.flac" in proc.stderr
    _no_stage_ran(proc)
    assert proc.stdout == "" and list(outside.iterdir()) == []
    # a model that is not there
    missing = tmp_path / "no-such-model"
    proc = run(str(jfk), "--model", str(missing), "--no-speakers", cwd=tmp_path)
    assert proc.returncode == 2
    assert "no-such-model" in proc.stderr
    _no_stage_ran(proc)


def test_srt_lines_count_the_speaker_label(tmp_path):
    """The issue's case: --max_line_width 42 gave 54-character SRT lines."""
    wav = shared_file("two_speakers.wav")
    out = tmp_path / "out"
    proc = run(
        str(wav),
        *tiny(),
        "--format",
        "srt",
        "--max_line_width",
        "42",
        "-o",
        str(out),
        "-q",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    srt = (output_dir(out, wav) / "transcript.srt").read_text()
    shown = [line for line in srt.splitlines() if line and "-->" not in line and not line.isdigit()]
    labelled = [line for line in shown if line.startswith("SPEAKER_")]
    assert len(labelled) >= 4
    for line in shown:
        assert len(line) <= 42 or " " not in line.split(": ", 1)[-1], line


# Each file's stage lines and the overall line after each file, as `saywho`
# and `saywho batch` print them for jfk.flac and jfk.wav.
STAGE_LINE = re.compile(
    r"\[(\d)/2\] (jfk\.\w+)  (decode|transcribe) done in \d+\.\d s "
    r"\(\d+%, \d:\d\d:\d\d elapsed(, ETA ~(\d:\d\d:\d\d|\?))?\)"
)
TWO_JFK_STAGES = [
    ("1", "jfk.flac", "decode"),
    ("1", "jfk.flac", "transcribe"),
    ("2", "jfk.wav", "decode"),
    ("2", "jfk.wav", "transcribe"),
]


def _two_jfk_stages(lines: list[str]) -> list[tuple[str, str, str]]:
    return [m.groups()[:3] for m in map(STAGE_LINE.fullmatch, lines) if m]


def _two_jfk_overall_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if re.match(r"ok +\S+jfk\.(flac|wav)  \[", line)]


def test_progress_lines_and_messages_off_a_terminal(tmp_path):
    """Two files: one line per stage of each file with its own seconds, the
    whole file's share, elapsed and ETA; an overall line after each file; no
    driver hint on a machine with no NVIDIA device; the CPU reason once."""
    jfk, wav = shared_file("jfk.flac"), shared_file("jfk.wav")
    proc = run(str(jfk), str(wav), *tiny(), "--no-speakers", "--beam-size", "1", "-v", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    seen = _two_jfk_stages(lines)
    assert seen == TWO_JFK_STAGES
    overall = _two_jfk_overall_lines(lines)
    assert len(overall) == 2
    assert "2 files (0 errors)" in overall[-1] and "elapsed" in overall[-1]
    assert "100%" in overall[-1] and "ETA 0:00:00" in overall[-1]
    # memory lines in GiB, the decoded audio among them while it is alive
    memory = [line for line in lines if line.startswith("[CPU Memory]")]
    assert memory and all(" GB" not in line and "GiB" in line for line in memory)
    assert any("| Audio 0.00 GiB |" in line for line in memory)
    cpu = [line for line in lines if "runs on the CPU" in line]
    assert len(cpu) <= 1
    if not gpu_present():
        assert "install driver" not in proc.stderr + proc.stdout
        assert "525" not in proc.stderr + proc.stdout
        assert cpu == ["saywho runs on the CPU: no NVIDIA GPU on this machine"]


def test_batch_progress_lines_per_file_and_overall(tmp_path):
    """``saywho batch`` shows what ``saywho`` shows for several files: each
    file's stages with their own seconds, the file's share, elapsed and ETA,
    and the batch's overall line after each file."""
    jfk, wav = shared_file("jfk.flac"), shared_file("jfk.wav")
    out = tmp_path / "out"
    args = ["batch", str(jfk), str(wav), "-o", str(out), *tiny(), "--no-speakers"]
    proc = run(*args, "--beam-size", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    seen = _two_jfk_stages(lines)
    assert sorted(seen) == TWO_JFK_STAGES
    overall = _two_jfk_overall_lines(lines)
    assert len(overall) == 2
    assert "2 files (0 errors)" in overall[-1] and "ETA 0:00:00" in overall[-1]
    # each file's overall line comes after that file's last stage
    assert lines.index(overall[0]) > max(
        i for i, line in enumerate(lines) if line.startswith("[1/2] ") and "transcribe" in line
    )


def _on_a_terminal(args: list[str], cwd) -> str:
    """What ``saywho ARGS`` draws on stderr when stderr is a terminal (a
    pseudo-terminal here; stdout is dropped)."""
    import pty
    import select

    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "saywho", *args],
        stdout=subprocess.DEVNULL,
        stderr=secondary,
        cwd=cwd,
    )
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([primary], [], [], 300)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(primary, 65536)
        except OSError:  # the other end closed
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0
    os.close(primary)
    return b"".join(chunks).decode("utf-8", "replace")


def _every_log_record_on_its_own_line(drawn: str, at_least: int) -> None:
    logs = [m.start() for m in re.finditer(re.escape("[CPU Memory]"), drawn)]
    assert len(logs) >= at_least
    for at in logs:
        before = drawn[:at]
        # a fresh line, or the progress line wiped first (\r and erase-line)
        assert before == "" or before.endswith("\n") or before.endswith("\r\x1b[K"), before[-80:]


def test_log_lines_are_never_glued_to_the_progress_line(tmp_path):
    """On a terminal the progress line is redrawn in place; with -v every log
    record starts on a line of its own."""
    jfk = shared_file("jfk.flac")
    drawn = _on_a_terminal([str(jfk), *tiny(), "--no-speakers", "-v"], tmp_path)
    assert "ETA" in drawn and "elapsed" in drawn  # the redrawn line
    _every_log_record_on_its_own_line(drawn, 2)


def test_the_batch_line_leaves_log_records_their_own_lines(tmp_path):
    jfk, wav = shared_file("jfk.flac"), shared_file("jfk.wav")
    out = tmp_path / "out"
    args = ["batch", str(jfk), str(wav), "-o", str(out), *tiny(), "--no-speakers", "-v"]
    drawn = _on_a_terminal(args, tmp_path)
    assert "2 files (0 errors)" in drawn and "elapsed" in drawn
    # each file's own line, redrawn in place: its stage, elapsed and ETA
    assert re.search(r"\[2/2\] jfk\.wav  transcribe +\[[#.]+\] +\d+%  \d:\d\d:\d\d elapsed", drawn)
    _every_log_record_on_its_own_line(drawn, 3)
