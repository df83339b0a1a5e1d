"""The installed package diarizes with the models it ships: no test weights,
no token, no network; and the names that choose models resolve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import saywho
from saywho.models.bundled import (
    CAMPP,
    SEGMENTATION,
    default_diarization_models,
    resolve_embedding,
    resolve_segmentation,
)

from .conftest import shared_file
from .weights import test_weights_root

SCRIPT = """
import json, sys
import saywho
from saywho.eval.metrics import diarization_error_rate
from saywho.models.bundled import default_diarization_models
from saywho.formats.rttm import read_rttm
seg, emb = default_diarization_models()
result = saywho.diarize(sys.argv[1])
(ref,) = read_rttm(sys.argv[2]).values()
der = diarization_error_rate(ref, result.turns, collar=0.25).der
print(json.dumps({"package": saywho.__file__, "segmentation": str(seg), "embedding": str(emb),
                  "speakers": result.speakers, "der": der}))
"""


def test_installed_package_diarizes_with_its_own_models(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SAYWHO_TEST_WEIGHTS", "HF_TOKEN")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(shared_file("two_speakers.wav")),
         str(shared_file("two_speakers.rttm"))],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    package = Path(out["package"]).parent
    for key in ("segmentation", "embedding"):
        assert Path(out[key]).is_relative_to(package / "data" / "models"), out
    assert out["speakers"] == ["SPEAKER_00", "SPEAKER_01"]
    assert out["der"] <= 0.10, out


def test_the_wheel_carries_the_models_and_their_licences():
    package = Path(saywho.__file__).parent / "data" / "models"
    assert SEGMENTATION.is_file() and SEGMENTATION.stat().st_size == 5_905_440
    assert CAMPP.is_file() and CAMPP.stat().st_size == 28_044_640
    licences = (package / "THIRD_PARTY_LICENSES").read_text()
    assert "Apache License" in licences and "Version 2.0" in licences
    assert "speech_campplus_sv_zh_en_16k-common_advanced" in licences
    assert "Pyannote segmentation-3.0" in licences and "Copyright (c) 2020 CNRS" in licences
    assert "Apache-2.0" in (package / "README.md").read_text()


def test_names_choose_models():
    assert default_diarization_models() == (SEGMENTATION, CAMPP)
    assert resolve_segmentation("pyannote/segmentation-3.0") == SEGMENTATION
    assert resolve_embedding("CAM++") == CAMPP
    assert resolve_embedding("/some/where.pt") == Path("/some/where.pt")


def test_ge2e_by_name_is_the_installed_resemblyzers(monkeypatch, tmp_path):
    """ "ge2e" is found where pip installs resemblyzer (its package folder holds
    pretrained.pt), not among the checkout's test weights; here that install
    is laid out on sys.path with the real checkpoint."""
    package = tmp_path / "site" / "resemblyzer"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    checkpoint = package / "pretrained.pt"
    checkpoint.symlink_to(test_weights_root() / "resemblyzer-ge2e" / "pretrained.pt")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert resolve_embedding("ge2e") == checkpoint
    assert resolve_embedding("Resemblyzer") == checkpoint


def test_ge2e_by_name_without_resemblyzer_says_what_to_do(monkeypatch, tmp_path):
    # a resemblyzer without its checkpoint, then none at all (an empty path)
    (tmp_path / "resemblyzer").mkdir()
    (tmp_path / "resemblyzer" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(saywho.ModelError, match="pip install resemblyzer") as e:
        resolve_embedding("ge2e")
    assert "has no pretrained.pt" in str(e.value)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "nothing")])
    monkeypatch.delitem(sys.modules, "resemblyzer", raising=False)
    with pytest.raises(saywho.ModelError, match="pip install resemblyzer"):
        resolve_embedding("ge2e")
