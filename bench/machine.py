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


# What a CPU without AVX-512 (or without AVX2) runs in CTranslate2 and the
# MKL and oneDNN inside it: the peer gets the same ceiling as saywho when
# SAYWHO_CPU_DISPATCH lowers saywho's, or the comparison would pit an AVX2
# saywho against an AVX-512 faster-whisper.
PEER_ISA = {
    "avx2": {
        "CT2_FORCE_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "ATEN_CPU_CAPABILITY": "avx2",  # torch's own vectorised kernels
    },
    "baseline": {
        "CT2_FORCE_CPU_ISA": "GENERIC",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "ATEN_CPU_CAPABILITY": "default",
    },
}


def force_peers_to_dispatch() -> None:
    """Sets the peers' ISA variables for SAYWHO_CPU_DISPATCH=avx2 or
    baseline (before the benches start their engines' processes)."""
    level = os.environ.get("SAYWHO_CPU_DISPATCH", "auto").strip().lower()
    for name, value in PEER_ISA.get(level, {}).items():
        os.environ.setdefault(name, value)


def describe() -> str:
    from saywho import _core

    d = _core.cpu_dispatch()
    forced = os.environ.get("SAYWHO_CPU_DISPATCH", "auto") != "auto"
    peer = os.environ.get("CT2_FORCE_CPU_ISA")
    return (
        f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs, {d['hardware']}); saywho kernels "
        f"{d['level']}{' forced' if forced else ''}{', AVX-512 VNNI' if d['vnni'] else ''}; "
        f"AMX tiles: {d['amx']}; "
        f"OpenBLAS kernels {d['blas']}" + (f"; CTranslate2 forced to {peer}" if peer else "")
    )


def product_path(compute: str) -> str:
    """Which kernels a compute type's large products take in this process:
    "AMX" (the tiles, hardware), "AMX-emulated", or the vector path."""
    from saywho import _core

    d = _core.cpu_dispatch()
    amx = d["amx"]
    if amx.startswith("emulated"):
        return "AMX-emu"
    if compute == "int8":
        if amx.startswith("AMX-INT8"):
            return "AMX"
        return "VNNI" if d["vnni"] else ("AVX2" if d["level"] == "x86-64-v3" else "SSE2")
    if compute == "bfloat16":
        return "AMX" if "AMX-BF16" in amx else "f32(bf16)"
    return "OpenBLAS"


if __name__ == "__main__":
    print(describe())
