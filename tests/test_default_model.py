"""The model a pip user gets with no --model: a real Whisper by name.

No Hugging Face hub answers here, so these check the name chosen (through
saywho's own name table) and the one line a user reads when the model is
neither cached nor downloadable; a cached model by name is covered in
test_model_names.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import saywho
from saywho.models.hub import WHISPER_REPOS, default_model_name


@pytest.fixture
def empty_offline_env(tmp_path) -> dict:
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_CACHE", None)
    return env


def saywho_cli(*args, env, cwd, python_head: str = "") -> subprocess.CompletedProcess:
    code = (
        f"{python_head}import sys; from saywho.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def test_the_defaults_are_real_model_names():
    assert default_model_name("cpu") == "small"
    assert default_model_name("cuda") == default_model_name("cuda:1") == "large-v3-turbo"
    assert WHISPER_REPOS[default_model_name("cpu")] == "Systran/faster-whisper-small"
    assert (
        WHISPER_REPOS[default_model_name("cuda:0")]
        == "mobiuslabsgmbh/faster-whisper-large-v3-turbo"
    )


def test_no_model_offline_and_uncached_says_how_in_one_line(tmp_path, empty_offline_env):
    proc = saywho_cli("--device", "cpu", "-q", env=empty_offline_env, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("saywho: model 'small' (Hugging Face repo Systran/faster-whisper-small)")
    assert str(tmp_path / "hf" / "hub") in line
    assert "HF_HUB_OFFLINE" in line and "run once with the network" in line
    assert "folder" in line
    assert "scripts/" not in line and "fetch_test_weights" not in line
    assert proc.stdout == ""


def test_a_named_model_offline_says_how_in_one_line(tmp_path, empty_offline_env):
    proc = saywho_cli(
        "--model", "large-v3-turbo", "--device", "cpu", env=empty_offline_env, cwd=tmp_path
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert "mobiuslabsgmbh/faster-whisper-large-v3-turbo" in line and "not in the cache" in line


def test_without_the_hub_extra_the_line_names_it(tmp_path, empty_offline_env):
    """A wheel installed without [hub]: huggingface_hub cannot be imported."""
    proc = saywho_cli(
        "--device",
        "cpu",
        env=empty_offline_env,
        cwd=tmp_path,
        python_head="import sys; sys.modules['huggingface_hub'] = None; ",
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert 'pip install "saywho[hub]"' in line and "Systran/faster-whisper-small" in line
    assert "scripts/" not in line


def test_pipeline_auto_takes_the_cpu_default(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(saywho.ModelError, match="Systran/faster-whisper-small"):
        saywho.Pipeline(model="auto", device="cpu")


def test_the_server_takes_the_same_default(tmp_path, empty_offline_env):
    """saywho serve without --model: the same model, the same one line, and
    no port opened."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "saywho",
            "serve",
            "--device",
            "cpu",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        capture_output=True,
        text=True,
        env=empty_offline_env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("saywho serve:")]
    assert "model 'small' (Hugging Face repo Systran/faster-whisper-small)" in line
    assert "not in the cache" in line and "scripts/" not in line
