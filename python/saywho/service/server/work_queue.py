"""Two queues in front of a fixed number of worker threads.

Synchronous requests (a client holds a connection open for each) wait in a
queue bounded by ``max_queued``; past it the route answers 429 with a
Retry-After. Jobs wait in their own queue: they are on disk and bounded by
the job store (``--max-jobs``), never counted against ``max_queued``, and a
free worker takes a waiting request before a waiting job, since a job's
client polls and a request's client holds a connection.

Retry-After comes from the drain rate the workers really had: seconds of
work per byte of upload over the recent runs, times the bytes ahead of a
new request (the ones queued, and what is left of the ones running), over
the workers. One long file among short ones then counts for its own length,
not as the length of every run.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from concurrent.futures import Future

log = logging.getLogger("saywho.server")
RECENT_RUNS = 50


class QueueFull(Exception):
    def __init__(self, retry_after: int):
        super().__init__(f"the queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class WorkQueue:
    def __init__(self, workers: int, max_queued: int):
        self.workers = workers
        self.max_queued = max_queued
        self._items: collections.deque = collections.deque()  # (fn, future, bytes)
        self._jobs: collections.deque = collections.deque()
        self._cond = threading.Condition(threading.RLock())
        self._running: dict[int, tuple[float, int]] = {}  # thread id -> (start, bytes)
        self._closed = False
        self._recent: collections.deque = collections.deque(maxlen=RECENT_RUNS)  # (s, bytes)
        self._threads = [
            threading.Thread(target=self._work, name=f"saywho-worker-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    @property
    def queued(self) -> int:
        """Synchronous requests waiting (what max_queued bounds)."""
        return len(self._items)

    @property
    def jobs_queued(self) -> int:
        return len(self._jobs)

    @property
    def running(self) -> int:
        return len(self._running)

    def seconds_per_byte(self) -> float | None:
        """The recent runs' drain rate, or None before any run."""
        seconds = sum(s for s, _ in self._recent)
        size = sum(b for _, b in self._recent)
        return seconds / max(size, 1) if self._recent else None

    def retry_after(self) -> int:
        """Seconds until the synchronous queue likely has room again: the work
        ahead (queued bytes, and the running runs' remaining bytes) at the
        recent drain rate, over the workers."""
        rate = self.seconds_per_byte()
        if rate is None:
            return 1
        now = time.perf_counter()
        with self._cond:
            ahead = sum(b for _fn, _f, b in self._items) * rate
            for start, size in self._running.values():
                ahead += max(0.0, size * rate - (now - start))
        return max(1, math.ceil(ahead / self.workers))

    def submit(self, fn, *, bounded: bool = True, size: int = 0) -> Future:
        """Queues ``fn``: a request (``bounded``: QueueFull past max_queued)
        or a job; ``size`` is its upload's bytes, for the drain rate."""
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the queue is closed")
            if bounded and len(self._items) >= self.max_queued:
                raise QueueFull(self.retry_after())  # the lock is an RLock
            (self._items if bounded else self._jobs).append((fn, future, size))
            self._cond.notify()
        return future

    def _work(self) -> None:
        me = threading.get_ident()
        while True:
            with self._cond:
                while not self._items and not self._jobs and not self._closed:
                    self._cond.wait()
                if self._closed and not self._items and not self._jobs:
                    return
                fn, future, size = (self._items or self._jobs).popleft()
                start = time.perf_counter()
                self._running[me] = (start, size)
            if not future.set_running_or_notify_cancel():
                with self._cond:
                    del self._running[me]
                continue
            result, error = None, None
            try:
                result = fn()
            except BaseException as e:  # the caller sees it through the future
                error = e
            if size and error is None:  # a failed or abandoned run drained nothing
                self._recent.append((time.perf_counter() - start, size))
            # no longer running before anyone hears the result: /health never
            # counts a run whose answer a client already has
            with self._cond:
                del self._running[me]
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)

    def cancel_waiting(self) -> int:
        """Cancels the work not yet started (callers see CancelledError; jobs
        stay queued on disk for the next start); returns how many requests.
        The running work goes on."""
        with self._cond:
            count = len(self._items)
            for queue in (self._items, self._jobs):
                while queue:
                    _fn, future, _size = queue.popleft()
                    future.cancel()
            return count

    def close(self, wait: bool = True) -> None:
        """Stops taking work; queued items not yet started are cancelled."""
        with self._cond:
            self._closed = True
            for queue in (self._items, self._jobs):
                while queue:
                    _fn, future, _size = queue.popleft()
                    future.cancel()
            self._cond.notify_all()
        if wait:
            for t in self._threads:
                t.join()
