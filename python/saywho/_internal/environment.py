"""The one module of saywho's Python that reads the process environment.

Every variable the package reads is listed in ``VARIABLES`` with what it
means; the rest of the package asks :func:`read` (or :func:`is_on`), so a
variable is found by reading this file, and a name not listed here is a
KeyError rather than a setting nobody documented. The C core reads its own
(``SAYWHO_CPU_DISPATCH``, ``SAYWHO_AMX_EMULATE``, ``SAYWHO_CUBLAS_PATH``,
``SAYWHO_CUDA_SYNC``, ``SAYWHO_CUDA_GRAPHS`` (0: the decoder's steps run
op by op instead of replaying a captured graph), ``SAYWHO_GPU_SELF_CHECK``
and the emulator's ``SAYWHO_CUDA_EMU_*``) where it uses them. Nothing here is for tests: test
set-up goes through function arguments.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

VARIABLES: Mapping[str, str] = {
    # saywho's own
    "SAYWHO_API_KEY": "saywho serve's API keys, comma-separated (as --api-key, repeated)",
    "SAYWHO_BLAS_CORETYPE": "the OpenBLAS kernel set to load, overriding saywho's choice",
    "SAYWHO_CPU_DISPATCH": "the instruction-set level the core uses (auto, avx2, avx512...)",
    "SAYWHO_CUDA_EMULATE": "1: 'cuda' and 'auto' open the CUDA backend built for the CPU",
    "SAYWHO_CUDA_EMULATOR_LIBRARY": "another build of that emulator (the sanitizer's, say)",
    "SAYWHO_CUBLAS_PATH": "folders searched for cuBLAS first (os.pathsep-separated)",
    # Hugging Face's, read as huggingface_hub reads them
    "HF_TOKEN": "the Hugging Face token for gated pyannote pipelines",
    "HF_HUB_OFFLINE": "1: never download; the hub cache must hold the model",
    "HF_HUB_CACHE": "the hub cache folder",
    "HF_HOME": "the Hugging Face folder (its hub/ is the cache) when HF_HUB_CACHE is unset",
    "XDG_CACHE_HOME": "where HF_HOME defaults to (its huggingface/)",
    # set, not chosen: OpenBLAS reads it while the core loads
    "OPENBLAS_CORETYPE": "OpenBLAS's kernel set, set by saywho._internal.blas_kernels while loading",
}

_ON = ("1", "true", "yes", "on")


def _listed(name: str) -> str:
    if name not in VARIABLES:
        raise KeyError(f"{name} is not one of saywho's environment variables (VARIABLES)")
    return name


def read(name: str, default: str | None = None) -> str | None:
    """The variable's value, or ``default`` when it is unset."""
    return os.environ.get(_listed(name), default)


def is_on(name: str) -> bool:
    """True when the variable is 1, true, yes or on (any case)."""
    return (read(name) or "").strip().lower() in _ON


def snapshot() -> dict[str, str]:
    """The listed variables that are set, as one plain dict."""
    return {name: os.environ[name] for name in VARIABLES if name in os.environ}


@contextlib.contextmanager
def set_while(name: str, value: str | None) -> Iterator[None]:
    """``name`` set to ``value`` (unset for None) inside the block, restored after."""
    before = os.environ.get(_listed(name))
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
