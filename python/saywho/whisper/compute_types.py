"""Whisper's compute types: faster-whisper's names, what each computes, where.

The list and the rule are the core's (csrc/whisper/whisper_compute.c), read
here through ``_core``: this module holds no name of its own
(tests/test_c_structure.py fails on a compute-type list outside that file).
``COMPUTE_TYPES`` are the names saywho takes (the CLI's and the server's
choices); ``CORE_COMPUTE_TYPES`` what the core computes, in its order;
``resolve_compute_type`` maps a name to what the core computes;
``check_compute_type_on`` refuses a compute the Runtime's backend lacks
before any weight is read, with the core's one message.
"""

from __future__ import annotations

from .._internal.native import _core

_TABLE = _core.compute_types()
COMPUTE_TYPES = tuple(_TABLE["names"])
CORE_COMPUTE_TYPES = _TABLE["core"]
# faster-whisper names saywho does not build (an OptionError saying so)
NOT_BUILT = _TABLE["not_built"]

HELP = (
    "Whisper's linear layers: float32 (default), int8 (auto picks int8) or bfloat16 "
    "(AMX tiles on Intel Xeons that have them); float16 needs a GPU"
)


def resolve_compute_type(compute_type: str) -> str:
    """faster-whisper's compute_type name -> what the core computes; a name
    not built is an OptionError, never a silent float32."""
    return _core.resolve_compute_type(compute_type)


def check_compute_type_on(compute_type: str, runtime: _core.Runtime) -> None:
    """An OptionError naming what is missing and what the backend computes
    when the open Runtime's backend cannot compute ``compute_type`` (float16
    and int8_float16 are the CUDA backend's; CTranslate2's CPU build refuses
    float16 compute too). The rule runs on the open backend's capabilities,
    so it needs the Runtime, not a device name."""
    _core.check_compute_type(runtime, compute_type)
