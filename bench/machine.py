"""One line that says what a bench ran on: the CPU's model, its level and
the kernels in use (saywho's dispatch, OpenBLAS's choice), so figures from
different machines are never compared blind."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> str:
    from saywho import _core

    d = _core.cpu_dispatch()
    forced = os.environ.get("SAYWHO_CPU_DISPATCH", "auto") != "auto"
    return (
        f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs, {d['hardware']}); saywho kernels "
        f"{d['level']}{' forced' if forced else ''}{', AVX-512 VNNI' if d['vnni'] else ''}; "
        f"OpenBLAS kernels {d['blas']}"
    )


if __name__ == "__main__":
    print(describe())
