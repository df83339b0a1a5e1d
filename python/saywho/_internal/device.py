"""Opening a device: where the CUDA backend library and cuBLAS are found."""

from __future__ import annotations

import glob
import logging
import os
import sys
from pathlib import Path

from . import environment
from .native import _core

log = logging.getLogger("saywho")


def cuda_library_path() -> str | None:
    """The CUDA backend shipped beside the extension, or None in a CPU-only build.

    With SAYWHO_CUDA_EMULATE=1 it is the CPU emulator's build of the same
    sources, so "cuda" and "auto" run the GPU code on the CPU (CI does).
    """
    if environment.read("SAYWHO_CUDA_EMULATE", "0") not in ("", "0"):
        return emulator_library_path()
    path = Path(_core.__file__).resolve().parent / "libsaywho_cuda.so"
    return str(path) if path.exists() else None


def emulator_library_path() -> str | None:
    """libsaywho_cuda_emu.so: the CUDA backend's kernels built for the CPU
    (docs/cuda_emulator.md). SAYWHO_CUDA_EMULATOR_LIBRARY names another build
    of it, such as the AddressSanitizer one."""
    env = environment.read("SAYWHO_CUDA_EMULATOR_LIBRARY")
    if env:
        return env
    path = Path(_core.__file__).resolve().parent / "libsaywho_cuda_emu.so"
    return str(path) if path.exists() else None


def cublas_search_path() -> str:
    """Directories where pip-installed CUDA libraries live (torch's copy first),
    ":"-separated, after those the user names in SAYWHO_CUBLAS_PATH.

    saywho never asks pip for cuBLAS: it uses the copy that torch (or anything
    else) already put in site-packages/nvidia/..., then the system's. The core
    takes the list as an argument (Runtime's cublas_path).
    """
    dirs: list[str] = []
    for base in sys.path:
        for pattern in ("nvidia/cublas/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            dirs.extend(glob.glob(os.path.join(base, pattern)))
    extra = environment.read("SAYWHO_CUBLAS_PATH")
    if extra:
        dirs = extra.split(os.pathsep) + dirs
    seen: list[str] = []
    for d in dirs:
        if d and d not in seen:
            seen.append(d)
    return os.pathsep.join(seen)


def validate_device(device: str) -> str:
    """``device`` as the core reads it (its one parser): an OptionError says what
    is accepted ("auto", "cpu", "cuda", "cuda:N", "cuda-emulated")."""
    _core.parse_device(device)
    return device


def open_runtime(device: str = "auto", threads: int = 0) -> _core.Runtime:
    """Opens the backend; for "auto" it logs one line when it falls back to the CPU.

    A GPU first passes a self-check (every kernel once against the CPU, once per
    process); SAYWHO_GPU_SELF_CHECK=0 skips it for users who know their GPU.
    """
    validate_device(device)
    if device == "cuda-emulated":
        # the GPU code on the CPU, through the same loader and table as a GPU
        emulator = emulator_library_path()
        if emulator is None:
            raise _core.DeviceError(
                "device 'cuda-emulated' cannot be used: this saywho was built without "
                "libsaywho_cuda_emu.so (SAYWHO_CUDA_EMULATOR=OFF)"
            )
        return _core.Runtime(device="cuda", cuda_library=emulator, threads=threads)
    library = cuda_library_path()
    if device != "cpu":
        if library is None:
            reason = "this saywho was built without its CUDA backend"
            if device.startswith("cuda"):
                raise _core.DeviceError(f"device {device!r} cannot be used: {reason}")
            log.info("saywho runs on the CPU: %s", reason)
            return _core.Runtime(device="cpu", threads=threads)
    cublas = cublas_search_path() if device != "cpu" else None
    runtime = _core.Runtime(
        device=device, cuda_library=library, threads=threads, cublas_path=cublas
    )
    reason = runtime.fallback_reason
    if reason:
        # A machine with a GPU that saywho does not use (an old driver, a failed
        # self-check) is told where a notebook shows it; one without a GPU
        # only at INFO, since there is nothing to do about it.
        seen = gpu_present() or "self-check" in reason
        log.log(
            logging.WARNING if seen else logging.INFO,
            "saywho runs on the CPU: %s",
            cpu_reason(reason),
        )
    return runtime


NO_GPU = "no NVIDIA GPU on this machine"


def gpu_present() -> bool:
    """Whether an NVIDIA device exists here: the driver's device nodes
    (/dev/nvidia0 ...) or its /proc folder (loaded, the nodes not made yet)."""
    return bool(glob.glob("/dev/nvidia[0-9]*")) or os.path.isdir("/proc/driver/nvidia")


def cpu_reason(reason: str) -> str:
    """Why "auto" took the CPU, as a user should read it: the core's CUDA
    hint ("install driver 525 or newer") only where an NVIDIA device exists
    but cannot be used; on a machine with none, just that."""
    if gpu_present() or "self-check" in reason:
        return reason
    return NO_GPU
