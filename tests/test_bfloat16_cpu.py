"""compute_type "bfloat16" on the CPU (docs/amx.md): the linear layers'
weights in bfloat16, activations rounded to bfloat16 on each product,
float32 sums. Without AMX the rounded operands go through the float32
product; SAYWHO_AMX_EMULATE=1 runs the AMX-BF16 tile kernel's own source
with TDPBF16PS emulated. Both must give float32's words on jfk (the golden
is faster-whisper's float32) at every CPU level, with timestamps and scores
within bfloat16's reach: where Whisper's timestamp distribution is flat, the
rounding can move a segment boundary (measured on an AVX2-only Zen 3: 7.54 s
where float32 says 7.74 s; the same tokens as float32 on AVX-512 and at the
baseline level, docs/amx.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from saywho import _core
from saywho.whisper.transcribe import WhisperModel

from .test_amx import _child
from .weights import test_model_dir

GOLDEN = json.loads(
    (Path(__file__).parent / "data" / "golden" / "jfk_tiny.en_greedy.json").read_text()
)
# |avg_logprob - golden's| allowed: measured 3.6e-4 (float32 path, AVX-512),
# 7e-4 (baseline), 3.6e-4 (emulated tiles); 7.9e-3 on AVX2, where the moved
# timestamp token is in the average
SCORE_TOLERANCE = 1e-2
# a segment boundary may move this far (Whisper's timestamps are 0.02 s
# steps; measured 0.2 s on AVX2); more means a wrong product, not rounding
TIME_TOLERANCE = 0.25
FIRST_TIMESTAMP = 50363  # tiny.en's <|0.00|>


def _words(tokens):
    return [t for t in tokens if t < FIRST_TIMESTAMP]


def _check_against_golden(rows):
    assert len(rows) == len(GOLDEN["segments"])
    for (text, tokens, avg_logprob, start, end), ref in zip(rows, GOLDEN["segments"]):
        assert _words(tokens) == _words(ref["tokens"])
        assert text == ref["text"]
        assert start == pytest.approx(ref["start"], abs=TIME_TOLERANCE)
        assert end == pytest.approx(ref["end"], abs=TIME_TOLERANCE)
        assert avg_logprob == pytest.approx(ref["avg_logprob"], abs=SCORE_TOLERANCE)


def test_bfloat16_on_the_cpu_gives_float32s_words(whisper_models, recordings):
    model = whisper_models["tiny.en:bfloat16"]
    assert model.compute_type == "bfloat16"
    segments, _ = model.transcribe(recordings["jfk"], **GOLDEN["options"])
    rows = [[s.text, list(s.tokens), s.avg_logprob, s.start, s.end] for s in segments]
    _check_against_golden(rows)
    # bfloat16, not float32 under another name: the scores moved
    assert rows[0][2] != GOLDEN["segments"][0]["avg_logprob"]


def test_emulated_amx_bf16_tiles_give_float32s_words(jfk_wav):
    got = _child(str(jfk_wav), "bfloat16", SAYWHO_AMX_EMULATE="1", SAYWHO_CPU_DISPATCH="auto")
    assert got["amx"].startswith("emulated"), got["amx"]
    _check_against_golden(got["segments"])


# the vector levels a CPU without AVX-512 or AVX2 runs, OpenBLAS's kernels
# included, forced on whatever CPU runs the test: the claim holds per level
OPENBLAS_KERNELS = {"avx2": "Haswell", "baseline": "Nehalem"}


@pytest.mark.parametrize("level", sorted(OPENBLAS_KERNELS))
def test_bfloat16_gives_float32s_words_at_each_vector_level(jfk_wav, level):
    if level == "avx2" and _core.cpu_dispatch()["hardware"] == "x86-64":
        pytest.skip("this CPU has no AVX2: its level cannot be forced here")
    kernels = OPENBLAS_KERNELS[level]
    got = _child(str(jfk_wav), "bfloat16", SAYWHO_CPU_DISPATCH=level, OPENBLAS_CORETYPE=kernels)
    assert got["amx"].startswith("off: SAYWHO_CPU_DISPATCH="), got["amx"]
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
