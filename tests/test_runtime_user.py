"""One life cycle for every object that holds a Runtime (saywho._internal.runtime_user):
borrowed Runtimes stay open, own ones close, close() is idempotent and gives
every byte back, parts close with their holder."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from saywho._internal.device import open_runtime
from saywho._internal.native import _core
from saywho._internal.runtime_user import RuntimeUser
from saywho.api.pipeline import Pipeline
from saywho.audio.vad import SileroVad, default_model_path
from saywho.diarization import Diarizer, SegmentationModel
from saywho.diarization.embedding_campp import CamppEmbedding
from saywho.diarization.embedding_ge2e import GE2EEncoder
from saywho.diarization.embedding_resnet import ResNetEmbedding
from saywho.whisper.transcribe import WhisperModel

from .weights import test_diarization_models, test_model_dir

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "saywho"


def test_every_runtime_holder_shares_the_base():
    for cls in (
        Pipeline,
        WhisperModel,
        Diarizer,
        SegmentationModel,
        CamppEmbedding,
        GE2EEncoder,
        ResNetEmbedding,
        SileroVad,
    ):
        assert issubclass(cls, RuntimeUser), cls
        # none writes the life cycle again
        for name in ("__enter__", "__exit__"):
            assert name not in vars(cls), (cls, name)


def test_runtimes_are_made_in_two_places_only():
    # the base's default CPU Runtime and saywho._internal.device's open_runtime
    makers = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Runtime"
            ):
                makers.add(path.relative_to(PACKAGE).as_posix())
    assert makers == {"_internal/runtime_user.py", "_internal/device.py"}


def test_own_runtime_closes_borrowed_one_stays():
    with SileroVad(default_model_path()) as vad:
        own = vad.runtime
        assert not own.closed and own.memory()["allocated"] > 0
        vad.probabilities(np.zeros(512 * 4, np.float32))
    assert vad.closed and own.closed
    with pytest.raises(_core.ModelError, match="closed"):
        vad.probabilities(np.zeros(512, np.float32))

    runtime = open_runtime("cpu")
    try:
        before = runtime.memory()["allocated"]
        vad = SileroVad(default_model_path(), runtime)
        assert vad.runtime is runtime and runtime.memory()["allocated"] > before
        vad.close()
        vad.close()  # idempotent
        assert vad.closed and not runtime.closed
        assert runtime.memory()["allocated"] == before
    finally:
        runtime.close()


def test_a_diarizer_closes_every_encoder_it_opened():
    # GE2E's weights too, not only CAM++'s: all are back in a borrowed pool
    segmentation, ge2e = test_diarization_models()
    runtime = open_runtime("cpu")
    try:
        before = runtime.memory()["allocated"]
        with Diarizer(segmentation, ge2e, runtime) as d:
            assert isinstance(d.embedding, GE2EEncoder)
            assert runtime.memory()["allocated"] > before
        assert d.closed and d.embedding.closed and d.segmentation.closed
        assert runtime.memory()["allocated"] == before
        with pytest.raises(_core.ModelError, match="this Diarizer is closed"):
            d(np.zeros(16000, np.float32))
    finally:
        runtime.close()


def test_whisper_model_on_its_own_runtime():
    with WhisperModel(test_model_dir("tiny.en"), device="cpu") as model:
        own = model.runtime
        assert own.memory()["allocated"] > 0
    assert model.closed and own.closed and model.core.closed


def test_a_closed_runtime_beneath_reads_as_closed():
    runtime = open_runtime("cpu")
    vad = SileroVad(default_model_path(), runtime)
    runtime.close()
    assert vad.closed
    vad.close()  # the model lets go of the lost backend without error
