"""The Pipeline's lifecycle: devices, memory counts, close() and with blocks."""

from __future__ import annotations

import gc
import logging
import resource

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho._internal.memory import MemoryReport, log_checkpoint


def touch_memory(p: saywho.Pipeline) -> None:
    rt = p.runtime  # the ops run in the pipeline's own pools
    x = np.ones((256, 256), dtype=np.float32)
    rt.matmul(x, x)


def test_with_block_returns_all_memory():
    with saywho.Pipeline(device="cpu") as p:
        touch_memory(p)
        inside = p.memory()
        assert inside.reserved > 0 and inside.peak_allocated > 0
        assert inside.allocated == 0  # ops free their tensors; the pool keeps them cached
        assert inside.total > 0
    after = p.memory()
    assert p.closed
    assert (after.allocated, after.reserved, after.live_blocks) == (0, 0, 0)


def test_memory_returns_after_an_exception_in_the_block():
    with pytest.raises(RuntimeError, match="boom"):
        with saywho.Pipeline(device="cpu") as p:
            touch_memory(p)
            assert p.memory().reserved > 0
            raise RuntimeError("boom")
    assert p.closed
    assert p.memory().reserved == 0


def test_close_is_idempotent_and_closed_pipeline_refuses_work():
    p = saywho.Pipeline(device="cpu")
    p.close()
    p.close()
    with pytest.raises(saywho.DeviceError, match="closed"):
        p.device  # noqa: B018
    with pytest.raises(saywho.DeviceError):
        p.load_audio(np.zeros(10, dtype=np.float32), sample_rate=16000)


def test_many_pipelines_do_not_leak():
    def rss_kb() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize() // 1024

    for _ in range(5):
        with saywho.Pipeline(device="cpu", log_memory=False) as p:
            touch_memory(p)
    gc.collect()
    start = rss_kb()
    for _ in range(200):
        with saywho.Pipeline(device="cpu", log_memory=False) as p:
            touch_memory(p)
    gc.collect()
    grown = rss_kb() - start
    assert grown < 8 * 1024, f"RSS grew by {grown} kB over 200 pipelines"


def test_cpu_device_and_thread_count():
    with saywho.Pipeline(device="cpu", threads=2) as p:
        assert p.device == "cpu"
        assert "2 threads" in p.device_name
        assert p.fallback_reason is None


def test_auto_says_why_it_runs_on_the_cpu(caplog, cuda_reason):
    with caplog.at_level(logging.INFO, logger="saywho"):
        with saywho.Pipeline(device="auto") as p:
            device = p.device
    if cuda_reason is None:
        assert device == "cuda"
    else:
        assert device == "cpu"
        lines = [r.getMessage() for r in caplog.records if "runs on the CPU" in r.getMessage()]
        assert len(lines) == 1 and len(lines[0]) > len("saywho runs on the CPU: ")


def test_cuda_without_a_gpu_raises_device_error(cuda_reason):
    if cuda_reason is None:
        with saywho.Pipeline(device="cuda") as p:
            assert p.device == "cuda"
        return
    with pytest.raises(saywho.DeviceError, match="cannot be used") as info:
        saywho.Pipeline(device="cuda")
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize(
    "device",
    ["tpu", "cuda:x", "", 3, "gpu", "cuda:1024", "cuda:9999", "cuda: 1", "cuda:+1", "cuda:"],
)
def test_bad_device_is_an_option_error(device):
    with pytest.raises(saywho.OptionError):
        saywho.Pipeline(device=device)


@pytest.mark.parametrize(
    "device, parsed",
    [
        ("auto", ("auto", 0)),
        ("cpu", ("cpu", 0)),
        ("cuda", ("cuda", 0)),
        ("cuda:0", ("cuda", 0)),
        ("cuda:1023", ("cuda", 1023)),
        ("cuda-emulated", ("cuda-emulated", 0)),
    ],
)
def test_the_core_reads_the_device_string_for_python_too(device, parsed):
    # one parser: what Python accepts is what the core opens, and the reverse
    assert _core.parse_device(device) == parsed
    with pytest.raises(saywho.OptionError, match="cuda:N"):
        _core.Runtime(device="gpu")


@pytest.mark.parametrize("threads", [-1, 1.5, 5000])
def test_bad_thread_count_is_an_option_error(threads):
    with pytest.raises(saywho.OptionError):
        saywho.Pipeline(device="cpu", threads=threads)


def test_checkpoint_line(caplog):
    with caplog.at_level(logging.INFO, logger="saywho"):
        with saywho.Pipeline(device="cpu") as p:
            touch_memory(p)
            report = p.checkpoint("After Whisper Cleanup")
    line = report.line("After Whisper Cleanup")
    assert line.startswith("[CPU Memory] After Whisper Cleanup: Allocated ")
    for part in ("GiB (", "| Reserved ", "| Free ", "| Total "):
        assert part in line
    assert " GB" not in line  # GiB, labelled so
    assert line.endswith(f"({report.source})") and report.source in ("host", "cgroup")
    assert any(r.getMessage() == line for r in caplog.records)


@pytest.mark.parametrize(
    "used, level, text",
    [
        (0.50, None, None),
        (0.75, logging.WARNING, "above 70%"),
        (0.90, logging.WARNING, "above 85%"),
    ],
)
def test_memory_warnings(caplog, used, level, text):
    total = 16 * 1024**3
    report = MemoryReport("cuda", 1, 2, 3, 4, 1, int(total * (1 - used)), total)
    assert report.line("X").startswith("[GPU Memory] X:")
    with caplog.at_level(logging.INFO, logger="saywho"):
        log_checkpoint(report, "X")
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    if level is None:
        assert not warnings
    else:
        assert len(warnings) == 1 and text in warnings[0].getMessage()


def test_runtime_is_usable_directly_and_frees_on_dealloc():
    rt = _core.Runtime(device="cpu")
    x = np.ones((64, 64), dtype=np.float32)
    np.testing.assert_array_equal(rt.matmul(x, x), np.full((64, 64), 64.0, dtype=np.float32))
    assert rt.memory()["reserved"] > 0
    with rt:
        pass
    assert rt.closed and rt.memory()["reserved"] == 0
    with pytest.raises(saywho.DeviceError, match="closed"):
        rt.matmul(x, x)
