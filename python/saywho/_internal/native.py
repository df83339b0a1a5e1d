"""saywho._core, the C extension, loaded once and the one way to reach it.

Every module takes the extension from here (``from .native import _core``),
never from the package root, so importing any one module loads the core the
same way: after NumPy (whose OpenBLAS then loads under the caller's
variables) and with the BLAS kernels of saywho's dispatch level
(blas_kernels.py says why).
"""

import numpy  # noqa: F401  (its own OpenBLAS loads first, under the caller's variables)

from .blas_kernels import loading_core

with loading_core():  # saywho's OpenBLAS takes the kernels of saywho's level
    from .. import _core
from .._core import AudioError, DeviceError, ModelError, OptionError, SaywhoError

__all__ = ["AudioError", "DeviceError", "ModelError", "OptionError", "SaywhoError", "_core"]
