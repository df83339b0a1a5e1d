"""Which of OpenBLAS's kernel sets saywho's core loads with.

OpenBLAS picks its kernels once, when the library loads, from the CPUID it
knows, or from ``OPENBLAS_CORETYPE`` when that is set. Both go wrong for us:
OpenBLAS releases older than the CPU (the wheel's is Debian bullseye's)
do not know newer cores, and ``OPENBLAS_CORETYPE=Haswell`` is a common
workaround left in environments for other libraries' OpenBLAS (NumPy's),
which on an AVX-512 CPU halves the width of every encoder product: Whisper
tiny.en's encoder took 0.19 s instead of 0.12 s a window on a Zen 5.

So saywho's core loads with the kernels of the level its own kernels run at
(``SAYWHO_CPU_DISPATCH``, docs/cpu_dispatch.md): SkylakeX (AVX-512) at
x86-64-v4, Haswell (AVX2, FMA) at v3, Nehalem at the baseline. One variable
then moves both, and a lowered dispatch runs what such a CPU would.
``SAYWHO_BLAS_CORETYPE`` names other kernels for saywho's core alone.
``OPENBLAS_CORETYPE`` is put back as it was once the core has loaded, so the
process's other OpenBLAS copies still see it.
"""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Iterator

from .. import _dispatch
from . import environment

# the flags each level needs, as cpu_dispatch.c checks them (Linux's names)
_V3_FLAGS = {"avx2", "fma", "bmi1", "bmi2", "popcnt", "f16c"}
_V4_FLAGS = _V3_FLAGS | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}

# OpenBLAS's kernel set for each level
KERNELS = {4: "SkylakeX", 3: "Haswell", 0: "Nehalem"}


def hardware_level(cpuinfo: str = "/proc/cpuinfo") -> int | None:
    """4, 3 or 0 from the CPU's flags; None where they cannot be read (not
    Linux on x86-64), and then OpenBLAS keeps its own choice."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return 4 if _V4_FLAGS <= flags else 3 if _V3_FLAGS <= flags else 0
    except OSError:
        pass
    return None


def dispatch_level(environ: dict[str, str] | None = None) -> int | None:
    """4, 3 or 0: the level ``SAYWHO_CPU_DISPATCH`` asks for (unset is auto),
    or None for a value the core refuses. The core's own parser reads it
    (cpu_dispatch.c, through saywho._dispatch, which loads no BLAS), so the
    spellings accepted here are exactly those the core accepts."""
    env = environment.snapshot() if environ is None else environ
    return _dispatch.requested_level(env.get("SAYWHO_CPU_DISPATCH"))


def core_kernels(environ: dict[str, str] | None = None, level: int | None = None) -> str | None:
    """The kernel set saywho's OpenBLAS should load with, or None for
    OpenBLAS's own detection: a CPU below AVX2 (OpenBLAS knows more sets
    there, Sandy Bridge's say), an unknown CPU, or a dispatch value the core
    rejects with an OptionError when a runtime opens."""
    env = environment.snapshot() if environ is None else environ
    named = env.get("SAYWHO_BLAS_CORETYPE", "").strip()
    if named:
        return named
    hardware = hardware_level() if level is None else level
    asked = dispatch_level(env)
    if hardware is None or asked is None:
        return None
    if asked < hardware:
        return KERNELS[asked]
    return KERNELS[hardware] if hardware >= 3 else None


@contextlib.contextmanager
def loading_core() -> Iterator[None]:
    """OPENBLAS_CORETYPE set to core_kernels() while the core is imported
    (OpenBLAS reads it as it loads, linked in or not), or unset where
    OpenBLAS detects for itself, and restored after."""
    with environment.set_while("OPENBLAS_CORETYPE", core_kernels()):
        yield
