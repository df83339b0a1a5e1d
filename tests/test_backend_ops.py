"""The backend table's ops against NumPy, on every device that opens here.

The same checks run on the CPU backend always and on the CUDA backend when a
GPU answers; the GPU cases say why they are skipped where none does.
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho._internal.device import open_runtime

DEVICES = ["cpu", "cuda", "cuda-emulated"]


@pytest.fixture(params=DEVICES)
def runtime(request, cuda_reason):
    if request.param == "cuda" and cuda_reason:
        pytest.skip(cuda_reason)
    rt = open_runtime(request.param)
    yield rt
    rt.close()
    assert rt.memory()["reserved"] == 0


def rand(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def test_matmul(runtime):
    a, b, bt = rand(33, 70), rand(70, 45, seed=1), rand(45, 70, seed=2)
    np.testing.assert_allclose(runtime.matmul(a, b), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(
        runtime.matmul(a, bt, trans_b=True, alpha=0.5), 0.5 * (a @ bt.T), rtol=1e-4, atol=1e-4
    )


def test_matmul_shape_mismatch_is_an_option_error(runtime):
    with pytest.raises(saywho.OptionError, match="do not fit"):
        runtime.matmul(rand(3, 4), rand(5, 6))


def test_elementwise(runtime):
    a, b, row = rand(200, 129), rand(200, 129, seed=3), rand(129, seed=4)
    np.testing.assert_array_equal(runtime.add(a, b), a + b)
    np.testing.assert_array_equal(runtime.add(a, row), a + row)
    np.testing.assert_array_equal(runtime.mul(a, row), a * row)
    np.testing.assert_array_equal(runtime.scale(a, 0.25), a * np.float32(0.25))
    from math import erf

    gelu = np.vectorize(lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))))(a.astype(np.float64))
    np.testing.assert_allclose(runtime.gelu(a), gelu, atol=1e-6)


def test_softmax_and_layernorm(runtime):
    x = rand(64, 300) * 4
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(runtime.softmax(x), e / e.sum(axis=1, keepdims=True), atol=1e-6)
    g, b = rand(300, seed=5), rand(300, seed=6)
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    ref = (x - mu) / np.sqrt(var + 1e-5) * g + b
    np.testing.assert_allclose(runtime.layernorm(x, g, b, eps=1e-5), ref, atol=2e-5)


def test_fully_masked_softmax_row_is_zero_not_nan(runtime):
    x = np.full((2, 8), -np.inf, dtype=np.float32)
    x[1, 3] = 0.0
    out = runtime.softmax(x)
    assert np.all(out[0] == 0) and out[1, 3] == 1.0


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_types_round_trip(runtime, dtype):
    x = rand(50, 40) * 100
    back = runtime.round_trip(x, dtype)
    if dtype == "float16":
        np.testing.assert_array_equal(back, x.astype(np.float16).astype(np.float32))
    else:
        # round to nearest even on the top 16 bits
        bits = x.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        np.testing.assert_array_equal(back, rounded.astype(np.uint32).view(np.float32))


def test_ops_leave_nothing_allocated(runtime):
    before = runtime.memory()
    for _ in range(5):
        runtime.matmul(rand(100, 100), rand(100, 100))
    after = runtime.memory()
    assert after["allocated"] == before["allocated"] == 0
    assert after["live_blocks"] == 0
    assert after["peak_allocated"] >= 3 * 100 * 100 * 4


def test_int8_whisper_follows_float32(runtime):
    """matmul_q8 through a whole (small, random) Whisper: the int8 model's
    logits stay within a few percent of the float32 model's, on each device;
    its memory comes back."""
    from saywho import _core

    from .test_whisper_model import DIMS, random_mel, random_weights

    weights, mel = random_weights(), random_mel(2, seed=3)
    tokens = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    logits = {}
    for compute in ("float32", "int8"):
        with _core.WhisperModel(runtime, DIMS, weights, compute_type=compute) as m:
            logits[compute] = m.new_state(m.encode(mel), 2).decode(tokens)
    spread = np.abs(logits["float32"]).max()
    assert np.abs(logits["int8"] - logits["float32"]).max() < 0.05 * spread
    assert runtime.memory()["allocated"] == 0
