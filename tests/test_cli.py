"""The saywho command, run as a user would: exit codes and written files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import wave

from saywho.audio.decode import load_audio
from saywho.audio.sample import sample_path
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.output_names import output_dir
from saywho.formats.rttm import read_rttm

from .conftest import shared_file
from .weights import test_model_dir


# Without --model saywho takes a model from the Hugging Face hub, which the
# tests cannot reach: they name the test weights (test_default_model.py
# covers the default).
def tiny() -> list[str]:
    return ["--model", str(test_model_dir("tiny.en"))]


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
        "--no-speakers",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ask not what your country can do for you" in proc.stdout
    folder = output_dir(out, jfk)
    assert folder.name.startswith("jfk-")
    assert sorted(p.name for p in out.iterdir()) == [folder.name]
    assert sorted(p.name for p in folder.iterdir()) == ["transcript.json", "transcript.srt"]
    assert (folder / "transcript.srt").read_text().startswith("1\n00:00:00,000 --> ")
    assert f"{jfk} -> {folder}: transcript.srt, transcript.json" in proc.stdout
    record = json.loads((folder / "transcript.json").read_text())
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
    for bad in (
        ["--num-speakers", "2", "--min-speakers", "1"],
        ["--min-speakers", "3", "--max-speakers", "2"],
        ["--num-speakers", "0"],
        ["--no-speakers", "--max-speakers", "2"],
        ["--compute-type", "float16x"],
        ["--batch-size", "0"],
    ):
        proc = run(*bad, cwd=tmp_path)
        assert proc.returncode == 2, bad
        assert "usage:" in proc.stderr


def test_an_unknown_model_name_is_a_usage_error(tmp_path):
    proc = run("--model", "huge-v9", cwd=tmp_path)
    assert proc.returncode == 2
    assert "huge-v9" in proc.stderr and "large-v3" in proc.stderr


def test_the_main_job_prints_who_said_what(tmp_path):
    """The README's first command: no file, the bundled two-speaker sample,
    Whisper from the test weights (scripts/setup.sh names them) and the diarization models the
    wheel ships (CAM++ since issue 11, GE2E before); speakers, their words
    and a summary line."""
    out = tmp_path / "out"
    proc = run("-o", str(out), *tiny(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    said = [line for line in lines if line.startswith("[")]
    assert {line.split("] ")[1].split(":")[0] for line in said} == {"SPEAKER_00", "SPEAKER_01"}
    text = " ".join(said).lower()
    assert "new jersey" in text and "chicago" in text
    assert re.fullmatch(
        r"0\.5 min of audio in \d+\.\d min, \d+\.\dx realtime \(1 of 1 files\)", lines[-1]
    )
    folder = output_dir(out, sample_path())
    record = json.loads((folder / "transcript.json").read_text())
    assert record["metadata"]["speakers"] == ["SPEAKER_00", "SPEAKER_01"]
    assert set(record["performance"]["stages"]) == {
        "decode",
        "transcription",
        "diarization",
        "alignment",
    }
    (hypothesis,) = read_rttm(folder / "transcript.rttm").values()
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    assert diarization_error_rate(reference, hypothesis, collar=0.25).der <= 0.10
    assert "diarization done" in proc.stderr  # the progress, one line per stage off a terminal


def test_speaker_count_can_be_given(tmp_path):
    wav = str(shared_file("two_speakers.wav"))
    proc = run(wav, "--num-speakers", "3", "-q", *tiny(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ", 3 speakers)" in proc.stdout
    assert proc.stderr == ""


def test_batch_size_runs_the_batched_mode(tmp_path):
    jfk = str(shared_file("jfk.flac"))
    proc = run("--batch-size", "4", "--no-speakers", jfk, *tiny(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ask not what your country can do for you" in proc.stdout.lower()


def test_vad_parameters_reach_the_vad(tmp_path):
    """No stretch is sure enough to be speech at threshold 1: nothing is
    transcribed; the settings are in the transcript's options."""
    jfk, model = str(shared_file("jfk.flac")), str(test_model_dir("tiny.en"))
    out = tmp_path / "out"
    transcript = output_dir(out, jfk) / "transcript.json"
    common = ["--model", model, "--beam-size", "1", "--no-speakers", "-q", "-o", str(out)]
    proc = run(jfk, *common, "--vad-parameter", "threshold=1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ask not" not in proc.stdout.lower()
    record = json.loads(transcript.read_text())
    assert record["segments"] == []
    assert record["metadata"]["options"]["vad"] is True
    assert record["metadata"]["options"]["vad_parameters"]["threshold"] == 1.0
    proc = run(jfk, *common, "--vad-parameter", "min_silence_duration_ms=300", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "ask not what your country" in proc.stdout.lower()
    record = json.loads(transcript.read_text())
    assert record["metadata"]["options"]["vad_parameters"]["min_silence_duration_ms"] == 300
    for bad in ("min_silence=3", "threshold=high", "threshold"):
        proc = run(jfk, "--vad-parameter", bad, cwd=tmp_path)
        assert proc.returncode == 2 and "--vad-parameter" in proc.stderr, bad


def test_embedding_step_reuses_embeddings_and_finds_the_two_voices(tmp_path):
    """--embedding-step 2: speakers embedded every other chunk (an
    approximation, about twice as fast); the same two voices."""
    out = tmp_path / "out"
    wav = str(shared_file("two_speakers.wav"))
    proc = run(wav, "--embedding-step", "2", "-q", "-o", str(out), *tiny(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ", 2 speakers)" in proc.stdout
    (hypothesis,) = read_rttm(output_dir(out, wav) / "transcript.rttm").values()
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    assert diarization_error_rate(reference, hypothesis, collar=0.25).der <= 0.10
    for bad in ("1.5", "0", "11"):
        proc = run(wav, "--embedding-step", bad, "-q", *tiny(), cwd=tmp_path)
        assert proc.returncode == 2, bad
        assert "embedding_step" in proc.stderr


def test_known_speakers_and_subtitle_options(tmp_path):
    """--speaker NAME=FILE names the voice it hears (a clip cut from the
    conversation's first part); the subtitle flags shape the VTT."""
    wav = shared_file("two_speakers.wav")
    samples = load_audio(wav)
    clip = tmp_path / "diane.wav"
    with wave.open(str(clip), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((samples[int(11.1 * 16000) : int(14.4 * 16000)] * 32767).astype("<i2"))
    out = tmp_path / "out"
    proc = run(
        str(wav),
        "--speaker",
        f"Diane={clip}",
        "-q",
        "-o",
        str(out),
        "--format",
        "vtt",
        "--format",
        "tsv",
        "--max_line_width",
        "24",
        "--max_line_count",
        "2",
        "--highlight_words",
        *tiny(),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    speakers = {
        line.split("] ")[1].split(":")[0] for line in proc.stdout.splitlines() if "] " in line
    }
    assert speakers == {"Diane", "SPEAKER_01"}
    vtt = (output_dir(out, wav) / "transcript.vtt").read_text()
    assert "<v Diane>" in vtt and "<u>" in vtt
    cues = vtt.split("\n\n")[1:]
    for cue in cues:
        lines = cue.strip().split("\n")[1:]
        assert 1 <= len(lines) <= 2, cue
        for line in lines:
            bare = re.sub(r"<[^>]*>", "", line)
            assert len(bare) <= 24 or " " not in bare, cue
    assert (output_dir(out, wav) / "transcript.tsv").read_text().startswith("start\tend\ttext\t")
    for bad in (["--speaker", "Diane"], ["--speaker", f"x={clip}", "--no-speakers"]):
        proc = run(str(wav), *bad, cwd=tmp_path)
        assert proc.returncode == 2 and "usage:" in proc.stderr, bad
    proc = run(str(wav), "--max_line_count", "2", cwd=tmp_path)
    assert proc.returncode == 2 and "needs --max_line_width" in proc.stderr
    missing = f"Ann={tmp_path / 'missing.wav'}"
    proc = run(str(wav), "--speaker", missing, "-q", *tiny(), cwd=tmp_path)
    assert proc.returncode == 1 and "missing.wav" in proc.stderr


def test_speaker_and_subtitle_flags_parse():
    from saywho.cli.main import build_parser
    from saywho.cli.options import known_speakers

    args = build_parser().parse_args(
        ["--speaker", "Ann=a.wav", "--speaker", "Bob=b.wav", "--speaker", "Ann=c.wav"]
    )
    assert known_speakers(args.speaker) == {"Ann": ["a.wav", "c.wav"], "Bob": ["b.wav"]}
    assert args.fill_nearest is True and args.max_line_width is None
    args = build_parser().parse_args(["--no-fill-nearest", "--max-line-width", "30"])
    assert args.fill_nearest is False and args.max_line_width == 30
    assert known_speakers(None) is None
