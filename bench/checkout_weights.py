"""The pinned test weights for benches: this checkout's tests/weights.py
(benches run from a checkout; the installed package does not know the
layout)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.weights import ge2e_path, weights_root, whisper_dir  # noqa: E402

__all__ = ["ge2e_path", "weights_root", "whisper_dir"]
