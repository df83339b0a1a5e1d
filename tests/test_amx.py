"""Intel AMX tiles (docs/amx.md) on a CPU without them: SAYWHO_AMX_EMULATE=1
runs the tile kernels' own source with the instructions emulated, through the
whole int8 pipeline. Their int32 sums are exact, so the transcript must be the
vector kernels' to the bit (tokens and scores). The C test test_amx checks the
emulator against Intel's rules and the kernels at every CPU level."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from saywho import _core

REPO = Path(__file__).resolve().parents[1]  # the child imports tests.weights from here

CHILD = """
import json, sys
from saywho import _core
from saywho._internal.device import open_runtime
from tests.weights import whisper_dir
from saywho.whisper.transcribe import WhisperModel
runtime = open_runtime("cpu")
model = WhisperModel(whisper_dir("tiny.en"), runtime, compute_type=sys.argv[2])
segments, _ = model.transcribe(sys.argv[1], beam_size=1)
rows = [[s.text, list(s.tokens), s.avg_logprob, s.start, s.end] for s in segments]
print(json.dumps({"amx": _core.cpu_dispatch()["amx"], "segments": rows}))
model.close()
runtime.close()
"""


def _child(*args: str, **env: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        env={**os.environ, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_emulated_tiles_give_the_int8_transcript_bit_for_bit(jfk_wav):
    # both runs in children at the same level (the CPU's): the tiles need
    # SAYWHO_CPU_DISPATCH=auto, and the float parts of the model differ
    # between levels, so a parent forced to another level is no reference
    want = _child(str(jfk_wav), "int8", SAYWHO_AMX_EMULATE="0", SAYWHO_CPU_DISPATCH="auto")
    got = _child(str(jfk_wav), "int8", SAYWHO_AMX_EMULATE="1", SAYWHO_CPU_DISPATCH="auto")
    assert got["amx"].startswith("emulated"), got["amx"]
    assert not want["amx"].startswith("emulated"), want["amx"]
    assert got["segments"] == want["segments"]
    assert "ask what you can do for your country" in "".join(s[0] for s in want["segments"])


def _amx_line(**env: str | None) -> str:
    code = "import json; from saywho import _core; print(json.dumps(_core.cpu_dispatch()))"
    child = {**os.environ, **env}
    for name in [n for n, v in env.items() if v is None]:
        del child[name]
    out = subprocess.run(
        [sys.executable, "-c", code], env=child, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)["amx"]


def test_the_avx512_level_keeps_the_tiles_off():
    line = _amx_line(SAYWHO_AMX_EMULATE="1", SAYWHO_CPU_DISPATCH="avx512")
    assert line.startswith("off: SAYWHO_CPU_DISPATCH=avx512 "), line


def test_the_amx_line_blames_no_setting_nobody_made():
    # the variable unset: the CPU's own answer (an AVX2-only CPU once read
    # "off: SAYWHO_CPU_DISPATCH asks for vector kernels only" here)
    line = _amx_line(SAYWHO_CPU_DISPATCH=None, SAYWHO_AMX_EMULATE=None)
    assert line.startswith(("AMX-INT8", "none: ")), line
    assert "SAYWHO_CPU_DISPATCH" not in line


def test_emulated_tiles_run_at_every_cpu_level():
    # emulation is a test's request, not a dispatch level: AVX2-only and
    # baseline CPUs run it too
    assert _amx_line(SAYWHO_CPU_DISPATCH=None, SAYWHO_AMX_EMULATE="1").startswith("emulated")


def test_cpu_dispatch_says_which_tiles_run():
    amx = _core.cpu_dispatch()["amx"]
    assert amx.startswith(("AMX-INT8", "none: ", "off: ", "emulated"))
