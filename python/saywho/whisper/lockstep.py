"""Several windows decoded together: one decoder state, one network call a step.

The search code (saywho.whisper.search) decodes one window against a
``WhisperDecoderState``. To decode a batch of windows without writing the
searches twice, each window's search runs unchanged in its own thread against
a view of a shared state; the views meet at every step, and the last one to
arrive runs a single ``decode`` for all windows' rows. The network releases
the GIL, the searches' NumPy work interleaves.

Rows of the shared state: window ``i`` owns rows ``i * rows .. i * rows +
rows - 1`` (the core's layout: beams of one audio are adjacent). A window whose
search has ended is fed its end token until the others end, since the
cache's length is common to all rows; its logits are not looked at.

Each row's logits are the same as when its window is decoded alone: the core
sums every row in an order that does not depend on how many rows there are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np


class Lockstep:
    """The meeting point of ``n_items`` searches over ``state`` (``n_items * rows``
    sequences)."""

    def __init__(self, state, n_items: int, rows: int, filler: int):
        self.state = state
        self.rows = rows
        self.n_items = n_items
        self.filler = filler
        self._cond = threading.Condition()
        self._live = set(range(n_items))
        self._pending: dict[int, np.ndarray] = {}
        self._reorders: dict[int, np.ndarray] = {}
        self._results: dict[int, np.ndarray] = {}
        self._round = 0
        self._error: BaseException | None = None

    # -- what a window's view calls -------------------------------------------
    def decode(self, item: int, tokens: np.ndarray) -> np.ndarray:
        tokens = np.asarray(tokens, dtype=np.int32)
        if tokens.ndim != 2 or tokens.shape[0] != self.rows:
            raise ValueError(f"window {item}: tokens must be [{self.rows}, n]")
        with self._cond:
            self._pending[item] = tokens
            my_round = self._round
            if len(self._pending) == len(self._live):
                self._step()
            else:
                self._cond.wait_for(lambda: self._round != my_round or self._error is not None)
            if self._error is not None:
                raise RuntimeError("another window of the batch failed") from self._error
            return self._results.pop(item)

    def reorder(self, item: int, indices: np.ndarray) -> None:
        with self._cond:
            self._reorders[item] = np.asarray(indices, dtype=np.int32)

    def finish(self, item: int, error: BaseException | None = None) -> None:
        """The window's search has ended (or failed: every other window stops)."""
        with self._cond:
            self._live.discard(item)
            if error is not None and self._error is None:
                self._error = error
                self._cond.notify_all()
            elif self._pending and len(self._pending) == len(self._live):
                self._step()

    # -- the shared step, run by the last window to arrive (lock held) ----------
    def _step(self) -> None:
        try:
            widths = {t.shape[1] for t in self._pending.values()}
            if len(widths) != 1:
                raise RuntimeError(f"windows fed different token counts in one step: {widths}")
            width = widths.pop()
            if self._reorders:
                order = np.arange(self.n_items * self.rows, dtype=np.int32)
                for item, idx in self._reorders.items():
                    order[item * self.rows : (item + 1) * self.rows] = item * self.rows + idx
                self.state.reorder(order)
                self._reorders.clear()
            feed = np.full((self.n_items * self.rows, width), self.filler, dtype=np.int32)
            for item, tokens in self._pending.items():
                feed[item * self.rows : (item + 1) * self.rows] = tokens
            logits = self.state.decode(feed)
            for item in self._pending:
                self._results[item] = logits[item * self.rows : (item + 1) * self.rows]
        except BaseException as exc:  # every waiting window must hear of it
            self._error = exc
        self._pending.clear()
        self._round += 1
        self._cond.notify_all()


class _ItemState:
    """What one window's search sees: the WhisperDecoderState protocol."""

    def __init__(self, lockstep: Lockstep, item: int):
        self._lockstep, self._item = lockstep, item

    def decode(self, tokens: np.ndarray) -> np.ndarray:
        return self._lockstep.decode(self._item, tokens)

    def reorder(self, indices: np.ndarray) -> None:
        self._lockstep.reorder(self._item, indices)


class _ItemModel:
    """What one window's ``generate`` sees: new_state hands out its view."""

    def __init__(self, lockstep: Lockstep, item: int):
        self._lockstep, self._item = lockstep, item

    def new_state(self, encoder_output, n_sequences: int) -> _ItemState:
        if n_sequences != self._lockstep.rows:
            raise ValueError(f"the batch decodes {self._lockstep.rows} rows per window")
        return _ItemState(self._lockstep, self._item)


def run_together(
    state, n_items: int, rows: int, filler: int, search: Callable[[object, int], object]
) -> Sequence[object]:
    """``search(model_view, item)`` for every item, in threads, in lockstep;
    their results in item order. The first error is raised here."""
    lockstep = Lockstep(state, n_items, rows, filler)
    results: list[object] = [None] * n_items
    errors: list[BaseException] = []

    def work(item: int) -> None:
        try:
            results[item] = search(_ItemModel(lockstep, item), item)
        except BaseException as exc:
            errors.append(exc)
            lockstep.finish(item, exc)
            return
        lockstep.finish(item)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(n_items)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
