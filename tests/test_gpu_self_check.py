"""A GPU proves itself before it is trusted: the self-check against the CPU,
its fallback and its error, shown on the CUDA backend's kernels through the
emulator, with one kernel broken on purpose (SAYWHO_CUDA_EMU_BREAK).

Each case runs in a fresh process: the verdict is cached per process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from saywho._internal.device import emulator_library_path

EMULATOR = "saywho CUDA emulator"

PROGRAM = """
import saywho
try:
    with saywho.Pipeline(device={device!r}, log_memory=False) as p:
        print("DEVICE", p.device, p.device_name)
except saywho.DeviceError as e:
    print("DEVICEERROR", e)
"""


def run(device: str, **env: str) -> subprocess.CompletedProcess:
    if emulator_library_path() is None:
        pytest.fail("this saywho has no libsaywho_cuda_emu.so (SAYWHO_CUDA_EMULATOR=OFF)")
    full = {**os.environ, "SAYWHO_CUDA_EMULATE": "1", **env}
    for name in ("SAYWHO_CUDA_EMU_BREAK", "SAYWHO_GPU_SELF_CHECK"):
        if name not in env:
            full.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(device=device)],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_a_good_gpu_is_used():
    done = run("auto")
    assert f"DEVICE cuda {EMULATOR}" in done.stdout
    assert "runs on the CPU" not in done.stderr


def test_auto_falls_back_with_one_warning_naming_the_kernel_and_the_gpu():
    done = run("auto", SAYWHO_CUDA_EMU_BREAK="softmax_rows")
    assert "DEVICE cpu" in done.stdout
    # no logging configured: only a WARNING reaches stderr (logging's last resort)
    lines = [line for line in done.stderr.splitlines() if "runs on the CPU" in line]
    assert len(lines) == 1
    assert "self-check" in lines[0] and "softmax kernel" in lines[0] and EMULATOR in lines[0]


def test_cuda_raises_device_error_saying_the_same():
    done = run("cuda", SAYWHO_CUDA_EMU_BREAK="lstm_recurrence_f32")
    assert "DEVICEERROR" in done.stdout
    assert "lstm kernel" in done.stdout and EMULATOR in done.stdout


def test_the_check_can_be_turned_off():
    done = run("cuda", SAYWHO_CUDA_EMU_BREAK="softmax_rows", SAYWHO_GPU_SELF_CHECK="0")
    assert f"DEVICE cuda {EMULATOR}" in done.stdout
