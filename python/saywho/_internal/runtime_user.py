"""The life cycle every object holding a Runtime shares: the models
(SileroVad, SegmentationModel, the three speaker encoders, WhisperModel),
the Diarizer that holds two of them, and the Pipeline.

An object given a Runtime borrows it (a Pipeline's, say) and leaves it open;
without one it opens its own (a CPU Runtime unless the class says otherwise)
and closes it in ``close()`` or when its ``with`` block ends, returning every
byte. ``close()`` first closes the parts the class names in ``_parts`` (the
core's model objects, or objects like this one), in that order, and may be
called again; a failure half way through a constructor closes what it had
opened (``with self._opening():``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from .native import _core


class RuntimeUser:
    runtime: _core.Runtime | None = None
    _own_runtime: bool = False
    _closed: bool = False
    # the attributes holding what close() closes, in order (each has a close())
    _parts: tuple = ("_model",)

    def _use_runtime(
        self,
        runtime: _core.Runtime | None,
        open_own: Callable[[], _core.Runtime] | None = None,
    ) -> _core.Runtime:
        """Borrows ``runtime``, or without one opens this object's own
        (``open_own()``, else a CPU Runtime); returns the one in use."""
        self._own_runtime = runtime is None
        if runtime is None:
            runtime = open_own() if open_own is not None else _core.Runtime(device="cpu")
        self.runtime = runtime
        return runtime

    @contextlib.contextmanager
    def _opening(self) -> Iterator[None]:
        """A constructor's loading: any failure closes what was opened so far."""
        try:
            yield
        except BaseException:
            self.close()
            raise

    def _live(self, name: str = "_model"):
        """The part ``name``, or a ModelError when this object is closed."""
        part = getattr(self, name, None)
        if part is None or self._closed:
            raise _core.ModelError(f"this {type(self).__name__} is closed")
        return part

    def close(self) -> None:
        # The parts stay, closed: the core's objects then answer any later
        # call with a ModelError rather than Python's AttributeError on None.
        if self._closed:
            return
        self._closed = True
        try:
            for name in self._parts:
                part = getattr(self, name, None)
                if part is not None:
                    part.close()
        finally:
            if self._own_runtime and self.runtime is not None:
                self.runtime.close()

    @property
    def closed(self) -> bool:
        """Whether close() ran (or the Runtime beneath was closed by its owner)."""
        return self._closed or (self.runtime is not None and self.runtime.closed)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
