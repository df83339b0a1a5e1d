"""compute_type "bfloat16" on the CPU (docs/amx.md): the linear layers'
weights in bfloat16, activations rounded to bfloat16 on each product,
float32 sums. Without AMX the rounded operands go through the float32
product; SAYWHO_AMX_EMULATE=1 runs the AMX-BF16 tile kernel's own source
with TDPBF16PS emulated. Both must give float32's tokens on jfk (the
golden is faster-whisper's float32), with scores within bfloat16's reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from saywho import _core
from saywho.whisper.transcribe import WhisperModel

from .test_amx import CHILD
from .weights import test_model_dir

GOLDEN = json.loads(
    (Path(__file__).parent / "data" / "golden" / "jfk_tiny.en_greedy.json").read_text()
)
# |avg_logprob - golden's| allowed: the GPU's bfloat16 is held to 5e-3
# (test_half_precision.py); measured here 3.6e-4 (float32 path), 2.5e-4 (tiles)
SCORE_TOLERANCE = 5e-3


def _check_against_golden(rows):
    assert [r[1] for r in rows] == [g["tokens"] for g in GOLDEN["segments"]]
    for (text, _, avg_logprob, start, end), ref in zip(rows, GOLDEN["segments"]):
        assert text == ref["text"]
        assert (start, end) == (ref["start"], ref["end"])
        assert avg_logprob == pytest.approx(ref["avg_logprob"], abs=SCORE_TOLERANCE)


def test_bfloat16_on_the_cpu_gives_float32s_tokens(whisper_models, recordings):
    model = whisper_models["tiny.en:bfloat16"]
    assert model.compute_type == "bfloat16"
    segments, _ = model.transcribe(recordings["jfk"], **GOLDEN["options"])
    rows = [[s.text, list(s.tokens), s.avg_logprob, s.start, s.end] for s in segments]
    _check_against_golden(rows)
    # bfloat16, not float32 under another name: the scores moved
    assert rows[0][2] != GOLDEN["segments"][0]["avg_logprob"]


def test_emulated_amx_bf16_tiles_give_float32s_tokens(jfk_wav):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(jfk_wav), "bfloat16"],
        env={**os.environ, "SAYWHO_AMX_EMULATE": "1", "SAYWHO_CPU_DISPATCH": "auto"},
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout)
    assert got["amx"].startswith("emulated"), got["amx"]
    _check_against_golden(got["segments"])


def test_bfloat16_weights_take_less_memory_and_give_it_all_back():
    runtime = _core.Runtime(device="cpu")
    sizes = {}
    try:
        for compute in ("float32", "bfloat16"):
            with WhisperModel(test_model_dir("tiny.en"), runtime, compute_type=compute):
                sizes[compute] = runtime.memory()["allocated"]
            assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()
    # the linear layers' weights (tiny.en: 4 + 4 layers of width 384, MLP
    # 1536; 16.5 M values) are a bfloat16 copy, 2 bytes each; the rest is
    # what float32 holds (the float16 checkpoint's matrices used where they lie);
    # the pool rounds each block up (measured 11% over)
    d, mlp = 384, 1536
    linear = 4 * (4 * d * d + 2 * d * mlp) + 4 * (8 * d * d + 2 * d * mlp)
    assert sizes["bfloat16"] - sizes["float32"] == pytest.approx(2 * linear, rel=0.15)
