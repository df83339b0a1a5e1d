"""The service as a pip user gets it: a fresh virtual environment (no system
site-packages) holding only the portable wheel and its ``[server]`` extra from
PyPI, ``saywho serve`` started from it, and the unmodified ``openai`` client
asking for the bundled sample in every response format.

The wheel is tests/portable_wheel.py's; the venv lives in the test's
temporary folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from openai import OpenAI

from .portable_wheel import portable_wheel
from .server_process import Server

FORMATS = ("json", "text", "srt", "vtt", "verbose_json", "diarized_json")


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory) -> str:
    wheel = portable_wheel()
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    installed = subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            f"{wheel}[server]",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if installed.returncode != 0:
        pytest.fail(
            f"pip install of the wheel's [server] extra failed:\n{installed.stderr[-4000:]}"
        )
    return python


@pytest.fixture(scope="module")
def served(venv_python, tmp_path_factory):
    where = subprocess.run(
        [
            venv_python,
            "-c",
            "import saywho, json; from saywho.audio.sample import sample_path;"
            "print(json.dumps([saywho.__file__, str(sample_path())]))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    package, sample = json.loads(where.stdout)
    assert "wheel-venv" in package, f"the venv imports another saywho: {package}"
    server = Server(tmp_path_factory.mktemp("wheel-server") / "data", python=venv_python).start()
    yield server, Path(sample)
    server.stop()


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_wheels_server_answers_the_openai_client(served, fmt):
    server, sample = served
    client = OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=600)
    # diarized_json asks for speakers the way OpenAI's API does: the diarizing model's name
    model = "gpt-4o-transcribe-diarize" if fmt == "diarized_json" else "whisper-1"
    with open(sample, "rb") as f:
        out = client.audio.transcriptions.create(model=model, file=f, response_format=fmt)
    if fmt in ("text", "srt", "vtt"):
        text = out if isinstance(out, str) else str(out)
        assert "Chicago" in text, text
        if fmt == "srt":
            assert "-->" in text and text.lstrip().startswith("1")
        if fmt == "vtt":
            assert text.startswith("WEBVTT")
        return
    assert "Chicago" in out.text, out.text
    if fmt == "verbose_json":
        assert out.segments and out.duration == pytest.approx(30.0, abs=0.1)
    if fmt == "diarized_json":
        speakers = {s.speaker for s in out.segments} - {"UNKNOWN"}
        assert speakers == {"A", "B"}, speakers  # the sample is a two-person call
