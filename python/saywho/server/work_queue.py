"""A bounded queue in front of a fixed number of worker threads.

The synchronous endpoint refuses work when ``max_queued`` requests already
wait (the route answers 429 with a Retry-After from the recent run times);
jobs, which wait on disk anyway, are queued without that bound.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from concurrent.futures import Future

log = logging.getLogger("saywho.server")


class QueueFull(Exception):
    def __init__(self, retry_after: int):
        super().__init__(f"the queue is full; retry after {retry_after} s")
        self.retry_after = retry_after


class WorkQueue:
    def __init__(self, workers: int, max_queued: int):
        self.workers = workers
        self.max_queued = max_queued
        self._items: collections.deque = collections.deque()
        self._cond = threading.Condition()
        self._running = 0
        self._closed = False
        self._recent: collections.deque = collections.deque(maxlen=20)  # seconds per run
        self._threads = [
            threading.Thread(target=self._work, name=f"saywho-worker-{i}", daemon=True)
            for i in range(workers)
        ]
        for t in self._threads:
            t.start()

    @property
    def queued(self) -> int:
        return len(self._items)

    @property
    def running(self) -> int:
        return self._running

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the queue's work over the workers."""
        each = sum(self._recent) / len(self._recent) if self._recent else 1.0
        return max(1, math.ceil(each * (self.queued + self._running) / self.workers))

    def submit(self, fn, *, bounded: bool = True) -> Future:
        future: Future = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("the queue is closed")
            if bounded and len(self._items) >= self.max_queued:
                raise QueueFull(self.retry_after())
            self._items.append((fn, future))
            self._cond.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if self._closed and not self._items:
                    return
                fn, future = self._items.popleft()
                self._running += 1
            if not future.set_running_or_notify_cancel():
                with self._cond:
                    self._running -= 1
                continue
            start = time.perf_counter()
            result, error = None, None
            try:
                result = fn()
            except BaseException as e:  # the caller sees it through the future
                error = e
            self._recent.append(time.perf_counter() - start)
            # no longer running before anyone hears the result: /health never
            # counts a run whose answer a client already has
            with self._cond:
                self._running -= 1
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)

    def cancel_waiting(self) -> int:
        """Cancels the work not yet started (its callers see CancelledError);
        returns how much. The running work goes on."""
        with self._cond:
            count = len(self._items)
            while self._items:
                _fn, future = self._items.popleft()
                future.cancel()
            return count

    def close(self, wait: bool = True) -> None:
        """Stops taking work; queued items not yet started are cancelled."""
        with self._cond:
            self._closed = True
            while self._items:
                _fn, future = self._items.popleft()
                future.cancel()
            self._cond.notify_all()
        if wait:
            for t in self._threads:
                t.join()
