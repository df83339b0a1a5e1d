"""The benches' one timer: the best of several runs, so a loaded machine's
slow runs do not count (the figures still say which CPU, bench/machine.py)."""

from __future__ import annotations

import time


def best_of(fn, repeat: int) -> float:
    """Seconds of the fastest of ``repeat`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
