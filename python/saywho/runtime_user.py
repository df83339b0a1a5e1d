"""The lifecycle that every model running on a Runtime shares.

A model given a Runtime borrows it (a Pipeline's, say) and leaves it open;
without one it opens a CPU Runtime of its own and closes it in ``close()``
or when its ``with`` block ends, returning every byte.
"""

from __future__ import annotations

from .native import _core


class RuntimeUser:
    runtime: _core.Runtime | None = None
    _own_runtime: bool = False

    def _use_runtime(self, runtime: _core.Runtime | None) -> None:
        self._own_runtime = runtime is None
        self.runtime = _core.Runtime(device="cpu") if runtime is None else runtime

    def close(self) -> None:
        if self._own_runtime and self.runtime is not None:
            self.runtime.close()
        self.runtime = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
