"""The CUDA backend's counters (Runtime.counters): launches, graph launches,
host synchronisations and bytes each way, counted by the backend's own code,
so the emulator's figures are a GPU's (docs/cuda_backend.md, "The step
budget"). Each op through the Runtime uploads its operands, runs and
downloads its result, so every figure of one op is known exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho._internal.device import open_runtime

FIELDS = {"launches", "graph_launches", "host_syncs", "bytes_down", "bytes_up"}


@pytest.fixture
def emulated():
    rt = open_runtime("cuda-emulated")
    yield rt
    rt.close()


def test_cpu_has_no_device_counters():
    rt = open_runtime("cpu")
    try:
        assert rt.counters() is None
    finally:
        rt.close()


def test_one_product_counts_its_copies_syncs_and_one_launch(emulated):
    a = np.ones((33, 70), np.float32)
    b = np.ones((70, 45), np.float32)
    emulated.counters(reset=True)
    c = emulated.matmul(a, b)
    counted = emulated.counters()
    assert set(counted) == FIELDS
    # two uploads (staged, not waited for: issue 38), the Runtime's
    # synchronize after the op and one download, each a wait; one cuBLAS call
    assert counted == {
        "launches": 1,
        "graph_launches": 0,
        "host_syncs": 2,
        "bytes_up": a.nbytes + b.nbytes,
        "bytes_down": c.nbytes,
    }


def test_counters_add_up_until_reset(emulated):
    x = np.ones((8, 300), np.float32)
    emulated.counters(reset=True)
    emulated.softmax(x)
    one = emulated.counters()
    emulated.softmax(x)
    two = emulated.counters(reset=True)
    assert one["launches"] == 1 and one["bytes_down"] == x.nbytes
    assert two == {k: 2 * v for k, v in one.items()}
    assert emulated.counters() == dict.fromkeys(FIELDS, 0)


def test_counters_of_a_closed_runtime_raise(emulated):
    emulated.close()
    with pytest.raises(saywho.DeviceError, match="closed"):
        emulated.counters()
