"""SAYWHO_CPU_DISPATCH lowers the instruction-set level of saywho's CPU
kernels, so one machine runs what a CPU without AVX-512 (or AVX2) would.
CI runs the Whisper goldens a second time at the baseline (scripts/test.sh);
the C test test_cpu_dispatch compares the levels' results bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import saywho
from saywho import _core

LEVELS = {"x86-64": 0, "x86-64-v3": 3, "x86-64-v4": 4}
REQUESTS = {"auto": 4, "": 4, "avx512": 4, "avx2": 3, "baseline": 0}


def _dispatch_in_child(**env) -> dict:
    code = "import json; from saywho import _core; print(json.dumps(_core.cpu_dispatch()))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_the_level_in_force_is_the_one_asked_for():
    info = _core.cpu_dispatch()
    asked = REQUESTS[os.environ.get("SAYWHO_CPU_DISPATCH", "auto")]
    assert LEVELS[info["level"]] == min(asked, LEVELS[info["hardware"]])
    if "OPENBLAS_CORETYPE" in os.environ:
        assert info["blas"].lower() == os.environ["OPENBLAS_CORETYPE"].lower()
    assert info["blas"]  # OpenBLAS names its kernels


def test_baseline_turns_off_every_extension():
    info = _dispatch_in_child(SAYWHO_CPU_DISPATCH="baseline")
    assert info["level"] == "x86-64" and info["vnni"] is False


def test_avx2_never_runs_avx512():
    info = _dispatch_in_child(SAYWHO_CPU_DISPATCH="avx2")
    assert LEVELS[info["level"]] == min(3, LEVELS[info["hardware"]])
    assert info["vnni"] is False


def test_an_unknown_level_is_an_option_error(monkeypatch):
    monkeypatch.setenv("SAYWHO_CPU_DISPATCH", "avx1024")
    with pytest.raises(saywho.OptionError, match="SAYWHO_CPU_DISPATCH=avx1024"):
        _core.cpu_dispatch()
