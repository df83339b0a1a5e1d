"""Whisper's compute types: faster-whisper's names, what each computes, where.

The one table of them. ``COMPUTE_TYPES`` are the names saywho takes (the
CLI's and the server's choices); ``resolve_compute_type`` maps a name to
what the core computes (the names _core.WhisperModel takes, in
python/ext/py_whisper.c's order: ``CORE_COMPUTE_TYPES``, checked by
tests/test_options_declared_once.py); ``check_compute_type_on`` refuses a
GPU-only compute on the CPU before any weight is read.
"""

from __future__ import annotations

from ..native import _core

# name -> what the core computes ("default" keeps float32: the readers widen
# float16 checkpoints, as CTranslate2 does on a CPU; "auto" picks the fastest
# on a CPU, int8; "int8" and "int8_float32" quantize the linear layers'
# weights per row; the half precisions keep the weight matrices in 16 bits
# and sum in float32; docs/half_precision.md, docs/amx.md)
_RESOLVED = {
    "default": "float32",
    "auto": "int8",
    "float32": "float32",
    "int8": "int8",
    "int8_float32": "int8",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int8_float16": "int8_float16",
}
COMPUTE_TYPES = tuple(_RESOLVED)
# what _core.WhisperModel computes, in its enum's order (py_whisper.c)
CORE_COMPUTE_TYPES = ("float32", "int8", "float16", "bfloat16", "int8_float16")
# the computes the CPU backend has; the rest need the CUDA backend.
# bfloat16 runs on both (AMX-BF16 tiles where the CPU has them)
CPU_COMPUTE_TYPES = ("float32", "int8", "bfloat16")
GPU_COMPUTE_TYPES = tuple(c for c in CORE_COMPUTE_TYPES if c not in ("float32", "int8"))
# faster-whisper names saywho does not build
_NOT_BUILT = ("int8_bfloat16", "int16")

HELP = (
    "Whisper's linear layers: float32 (default), int8 (auto picks int8) or bfloat16 "
    "(AMX tiles on Intel Xeons that have them); float16 needs a GPU"
)


def resolve_compute_type(compute_type: str) -> str:
    """faster-whisper's compute_type name -> what the core computes; a name
    not built is an OptionError, never a silent float32."""
    if compute_type in _RESOLVED:
        return _RESOLVED[compute_type]
    if compute_type in _NOT_BUILT:
        raise _core.OptionError(
            f"compute_type {compute_type!r} is not built in saywho yet; "
            "use 'float32' or 'int8' (or 'default', 'auto')"
        )
    raise _core.OptionError(
        f"unknown compute_type {compute_type!r}; expected one of {', '.join(COMPUTE_TYPES)}"
    )


def check_compute_type_on(compute_type: str, device: str) -> None:
    """float16 and int8_float16 are the CUDA backend's: on the CPU they are an
    OptionError (CTranslate2's CPU build refuses float16 compute too)."""
    if compute_type not in CPU_COMPUTE_TYPES and device != "cuda":
        raise _core.OptionError(
            f"compute_type {compute_type!r} needs a GPU: the {device} backend computes "
            "float32, int8 and bfloat16; use compute_type='float32' or 'int8' (or 'bfloat16', "
            "'default', 'auto'), or device='cuda'"
        )
