"""The portable wheel for the tests that install it: wheels/build_wheel.sh
(cached by a hash of its inputs under /var/cache/saywho-wheels, so after
scripts/test.sh built it this is a copy), then the one file it leaves in dist/."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def portable_wheel() -> Path:
    proc = subprocess.run(
        ["bash", "wheels/build_wheel.sh"], cwd=REPO, capture_output=True, text=True, timeout=3600
    )
    if proc.returncode != 0:
        pytest.fail(f"wheels/build_wheel.sh failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
    wheels = sorted((REPO / "dist").glob("saywho-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]
