"""Whisper models by name, repo id or folder, with huggingface_hub's cache.

No network here: the cache is built by hand in HF's layout from the real
test weights, and huggingface_hub is asked to stay offline.
"""

from __future__ import annotations

import os
import sys

import pytest

import saywho
from saywho.models.hub import WHISPER_REPOS, resolve_model
from saywho.whisper.transcribe import WhisperModel

from .conftest import shared_file
from .weights import test_model_dir

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def fill_cache(home, repo: str, source) -> str:
    """HF_HOME/hub/models--owner--name/{refs/main, snapshots/<commit>/...}."""
    root = home / "hub" / ("models--" + repo.replace("/", "--"))
    snapshot = root / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(COMMIT)
    for f in source.iterdir():
        os.symlink(f, snapshot / f.name)
    return str(snapshot)


@pytest.fixture
def offline_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "hf"


def test_a_folder_is_used_as_it_is():
    folder = test_model_dir("tiny.en")
    assert resolve_model(folder) == folder
    # the test weights have no name of their own in the package (tests/weights.py)
    with pytest.raises(saywho.ModelError, match="neither a model folder"):
        resolve_model("test:tiny.en")


def test_unknown_names_list_the_known_ones():
    with pytest.raises(saywho.ModelError, match="large-v3-turbo") as e:
        resolve_model("huge-v9")
    assert "tiny.en" in str(e.value) and "owner/name" in str(e.value)


def test_names_map_to_faster_whispers_conversions():
    assert WHISPER_REPOS["tiny.en"] == "Systran/faster-whisper-tiny.en"
    assert WHISPER_REPOS["turbo"] == WHISPER_REPOS["large-v3-turbo"]
    assert set(WHISPER_REPOS) >= {"tiny", "base", "small", "medium", "large-v2", "large-v3"}


def test_offline_and_not_cached_says_what_and_where(offline_home):
    with pytest.raises(saywho.ModelError) as e:
        resolve_model("base.en")
    message = str(e.value)
    assert "Systran/faster-whisper-base.en" in message
    assert str(offline_home / "hub") in message and "not in the cache" in message


def test_offline_cached_model_by_name_transcribes(offline_home):
    snapshot = fill_cache(offline_home, "Systran/faster-whisper-tiny.en", test_model_dir("tiny.en"))
    assert str(resolve_model("tiny.en")) == snapshot
    assert str(resolve_model("Systran/faster-whisper-tiny.en", local_files_only=True)) == snapshot
    with WhisperModel("tiny.en", device="cpu") as model:
        segments, _ = model.transcribe(str(shared_file("jfk.wav")), beam_size=1)
        text = "".join(s.text for s in segments).lower()
    assert "ask not what your country can do for you" in text.replace(",", "")


def test_without_huggingface_hub_the_error_says_how(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    with pytest.raises(saywho.ModelError, match=r"pip install \"saywho\[hub\]\""):
        resolve_model("small")


def test_pipeline_takes_a_name(offline_home):
    fill_cache(offline_home, "Systran/faster-whisper-tiny.en", test_model_dir("tiny.en"))
    with saywho.Pipeline(model="tiny.en", device="cpu") as p:
        segments, info = p.transcribe(shared_file("jfk.wav"), beam_size=1)
    assert info.language == "en" and segments
