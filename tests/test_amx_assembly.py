"""The two ways the AMX kernels reach the real instructions (csrc/runtime/cpu/amx_build.h):
GCC 11+ through its intrinsics, older GCC (the portable wheel's GCC 10 on bullseye,
whose assembler knows no AMX either) as instruction bytes in inline assembly. No CPU here need have AMX, so the check is on the code
itself: both builds of each kernel file must hold the same tile instructions, the
same number of times, on the same tile registers in the same operand order. A
wrong byte fails here, not on a
user's Xeon."""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[1] / "csrc" / "runtime"
CPU = RUNTIME / "cpu"  # the CPU backend's kernels, beside the runtime's core
TILE_OPS = re.compile(
    r"\b(ldtilecfg|tilerelease|tilezero|tileloadd|tilestored|tdpbssd|tdpbf16ps)\b([^\n#<]*)"
)


def _tile_instructions(source: Path, out: Path, *flags: str) -> collections.Counter:
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-std=c11",
            f"-I{CPU}",
            f"-I{RUNTIME}",
            *flags,
            "-c",
            str(source),
            "-o",
            str(out),
        ],
        check=True,
    )
    listing = subprocess.run(
        ["objdump", "-d", str(out)], capture_output=True, text=True, check=True
    )
    found = collections.Counter()
    for op, operands in TILE_OPS.findall(listing.stdout):
        # registers only: the compiler picks the base/index registers freely
        found[(op, tuple(re.findall(r"%tmm\d", operands)))] += 1
    return found


@pytest.mark.parametrize("kernel", ["amx_q8_hw.c", "amx_bf16_hw.c"])
def test_the_assembly_build_holds_the_intrinsics_builds_instructions(kernel, tmp_path):
    for tool in ("gcc", "objdump"):
        assert shutil.which(tool), f"{tool} is needed to compile and read the AMX kernels"
    version = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True).stdout
    assert int(version.split(".")[0]) >= 11, f"gcc {version.strip()}: the intrinsics need 11+"
    source = CPU / kernel
    intrinsics = _tile_instructions(source, tmp_path / "intrinsics.o")
    assembly = _tile_instructions(source, tmp_path / "assembly.o", "-DSW_AMX_FORCE_ASM")
    assert sum(intrinsics.values()) > 10, f"no tile kernel was built from {kernel}: {intrinsics}"
    dot = "tdpbssd" if "q8" in kernel else "tdpbf16ps"
    assert any(op == dot for op, _ in intrinsics), intrinsics
    assert assembly == intrinsics
