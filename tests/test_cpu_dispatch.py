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
from saywho import _core, _dispatch
from saywho._internal.blas_kernels import KERNELS, core_kernels, dispatch_level, hardware_level

LEVELS = {"x86-64": 0, "x86-64-v3": 3, "x86-64-v4": 4}
REQUESTS = {"auto": 4, "": 4, "avx512": 4, "avx2": 3, "baseline": 0}


def _dispatch_in_child(**env) -> dict:
    """cpu_dispatch() in a fresh interpreter (OpenBLAS picks its kernels when
    it loads), with the OPENBLAS_CORETYPE the child sees after the import."""
    code = (
        "import json, os; from saywho import _core; "
        "print(json.dumps({**_core.cpu_dispatch(), 'env': os.environ.get('OPENBLAS_CORETYPE')}))"
    )
    full = {k: v for k, v in os.environ.items() if k not in ("SAYWHO_BLAS_CORETYPE",)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**full, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _kernels_for(level: int) -> str:
    """The kernels saywho's OpenBLAS should run at a level: its own set from
    AVX2 up, OpenBLAS's own detection below (a child with no variable)."""
    if level >= 3:
        return KERNELS[level].lower()
    return _dispatch_in_child(SAYWHO_BLAS_CORETYPE="", OPENBLAS_CORETYPE="")["blas"].lower()


def test_the_level_in_force_is_the_one_asked_for():
    info = _core.cpu_dispatch()
    asked = REQUESTS[os.environ.get("SAYWHO_CPU_DISPATCH", "auto")]
    assert LEVELS[info["level"]] == min(asked, LEVELS[info["hardware"]])
    # saywho's OpenBLAS runs the kernels of saywho's level (blas_kernels.py);
    # below AVX2 OpenBLAS detects its own
    assert info["blas"]
    if core_kernels() is not None:
        assert info["blas"].lower() == core_kernels().lower()


def test_the_cpu_level_read_before_the_core_loads_is_the_cores():
    """blas_kernels reads /proc/cpuinfo's flags before the core exists; it
    must name the level cpu_dispatch.c finds with CPUID."""
    assert hardware_level() == LEVELS[_core.cpu_dispatch()["hardware"]]


def test_openblas_coretype_left_for_other_libraries_does_not_narrow_saywho():
    """OPENBLAS_CORETYPE=Haswell (a workaround often left for NumPy's
    OpenBLAS) halved the encoder's products on an AVX-512 CPU: saywho's
    OpenBLAS takes its level's kernels and the variable is put back."""
    hardware = LEVELS[_core.cpu_dispatch()["hardware"]]
    info = _dispatch_in_child(OPENBLAS_CORETYPE="Nehalem", SAYWHO_CPU_DISPATCH="auto")
    assert info["blas"].lower() == _kernels_for(hardware)
    assert info["env"] == "Nehalem"


@pytest.mark.parametrize(
    ("env", "kernels"),
    [
        ({"SAYWHO_CPU_DISPATCH": "baseline"}, "Nehalem"),
        ({"SAYWHO_CPU_DISPATCH": "auto", "SAYWHO_BLAS_CORETYPE": "Nehalem"}, "Nehalem"),
    ],
)
def test_the_dispatch_or_saywho_blas_coretype_choose_the_kernels(env, kernels):
    info = _dispatch_in_child(**env)
    assert info["blas"].lower() == kernels.lower()
    assert info["env"] == os.environ.get("OPENBLAS_CORETYPE")


def test_avx2_dispatch_runs_openblas_avx2_kernels():
    """Haswell's kernels at the AVX2 dispatch; a CPU without AVX2 runs at
    its own level, with OpenBLAS's own detection."""
    hardware = LEVELS[_core.cpu_dispatch()["hardware"]]
    info = _dispatch_in_child(SAYWHO_CPU_DISPATCH="avx2", OPENBLAS_CORETYPE="SkylakeX")
    assert info["blas"].lower() == _kernels_for(min(3, hardware))


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


# every level's spellings (cpu_dispatch.h), and near misses: the case, spaces
ACCEPTED = {
    "auto": 4,
    "": 4,
    "amx": 4,
    "avx512": 4,
    "x86-64-v4": 4,
    "avx2": 3,
    "x86-64-v3": 3,
    "baseline": 0,
    "x86-64": 0,
}
REFUSED = ["AVX2", "Auto", " avx2", "avx2 ", "avx1024", "v3", "x86_64"]


@pytest.mark.parametrize("value", [*ACCEPTED, *REFUSED])
def test_python_and_the_core_accept_and_refuse_the_same_spellings(monkeypatch, value):
    """Python reads the level before the core loads (for OpenBLAS's kernels)
    through the core's own parser: a spelling one side takes, the other takes
    at the same level, and one refused is refused by both with one message."""
    monkeypatch.setenv("SAYWHO_CPU_DISPATCH", value)
    assert dispatch_level() == ACCEPTED.get(value)
    if value in ACCEPTED:
        _core.cpu_dispatch()  # the core opens a CPU backend's check with it
        assert _dispatch.refusal(value) is None
        return
    with pytest.raises(saywho.OptionError) as e:
        _core.cpu_dispatch()
    assert str(e.value) == _dispatch.refusal(value)
    assert f"SAYWHO_CPU_DISPATCH={value} is not a dispatch level" in str(e.value)
    # a refused value leaves OpenBLAS to detect its own kernels
    assert core_kernels({"SAYWHO_CPU_DISPATCH": value}, level=4) is None


def _int8_transcript(jfk_wav, **env) -> list:
    from .test_amx import CHILD

    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(jfk_wav), "int8"],
        env={**os.environ, "SAYWHO_AMX_EMULATE": "0", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["segments"]


def test_int8_levels_agree_to_the_bit_when_openblas_runs_the_same_kernels(jfk_wav):
    """Why the avx512 and avx2 int8 paths can give other tokens (issue 30):
    saywho's own kernels agree bit for bit across levels, but OpenBLAS runs
    SkylakeX's kernels at x86-64-v4 and Haswell's at v3 for the float32 parts
    (the encoder's attention, the convolutions), which sum in other orders;
    int8 quantizes activations on every product, so an ulp can move a value
    across a rounding step. With OpenBLAS's kernels held the same, two levels
    give the same transcript to the bit (tokens and scores); measured on a
    Zen 5, the 1-minute bench meeting's beam-5 int8 tokens part at token 12
    between avx512 and avx2 and agree all through with the kernels held."""
    hardware = LEVELS[_core.cpu_dispatch()["hardware"]]
    if hardware >= 4:
        high = _int8_transcript(jfk_wav, SAYWHO_CPU_DISPATCH="auto")
        low = _int8_transcript(jfk_wav, SAYWHO_CPU_DISPATCH="avx2", SAYWHO_BLAS_CORETYPE="SkylakeX")
    elif hardware == 3:
        high = _int8_transcript(jfk_wav, SAYWHO_CPU_DISPATCH="avx2")
        low = _int8_transcript(
            jfk_wav, SAYWHO_CPU_DISPATCH="baseline", SAYWHO_BLAS_CORETYPE="Haswell"
        )
    else:
        pytest.fail("this CPU has neither AVX2 nor AVX-512: there is no pair of levels to compare")
    assert high == low
