"""What the routes share: the settings, the Pipelines, the queue and the jobs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from concurrent.futures import CancelledError

from ..native import _core
from .config import ServerConfig
from .errors import APIError, from_saywho, internal, shutting_down
from .fields import AudioRequest
from .jobs import JobStore
from .pool import PipelinePool
from .runner import run
from .streaming import ClientGone, LiveRun
from .work_queue import QueueFull, WorkQueue

log = logging.getLogger("saywho.server")


class JobCancelled(Exception):
    pass


def as_api_error(error: BaseException, filename: str | None = None, path: str | None = None):
    """Any failure of a run as the APIError a client gets (logged if unexpected)."""
    if isinstance(error, APIError):
        return error
    if isinstance(error, CancelledError):  # the queue closed before it ran
        return shutting_down()
    if isinstance(error, _core.SaywhoError):
        api = from_saywho(error, param="model" if isinstance(error, _core.ModelError) else None)
        if path and filename is not None:  # the client's name, not the spool's
            api.message = api.message.replace(path, filename)
        return api
    log.error("request failed", exc_info=error)
    return internal()


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def queue_full(retry_after: int) -> APIError:
    return APIError(
        429,
        f"Too many requests are waiting; retry after {retry_after} s",
        type="rate_limit_error",
        code="queue_full",
        headers={"Retry-After": str(retry_after)},
    )


class ServerState:
    def __init__(self, config: ServerConfig):
        self.config = config
        self.closing = False
        self.pool = PipelinePool(config.model, config.device, config.compute_type, config.workers)
        self.queue = WorkQueue(config.workers, config.max_queued)
        self.jobs = JobStore(config.data_dir, config.job_ttl_s)
        self._cancelled: set[str] = set()
        self._cancel_lock = threading.Lock()

    def start(self) -> None:
        """Loads the default model (a bad --model fails here, not at the first
        request) and resumes the jobs a previous process left."""
        self.pool.get(self.config.model, None)
        self.jobs.expire()
        for job_id in self.jobs.recover():
            self.queue.submit(lambda j=job_id: self._run_job(j), bounded=False)

    async def run_now(self, request: AudioRequest, path: str, filename: str):
        """The synchronous endpoint: queued (429 when full), awaited."""
        try:
            future = self.queue.submit(lambda: run(request, path, self.pool))
        except QueueFull as full:
            raise queue_full(full.retry_after) from None
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if future.cancelled():  # the server is shutting down: it never started
                raise shutting_down() from None
            raise  # the request itself was cancelled
        except Exception as e:
            raise as_api_error(e, filename, path) from None

    async def run_streaming(self, request: AudioRequest, path: str, filename: str):
        """``stream=true``: queued as run_now, but answered from the run's
        first sign of life on. Returns (live run, its first item); an error
        before that is raised as the APIError a client gets. The upload is
        removed when the run ends, however it ends."""
        live = LiveRun(asyncio.get_running_loop())

        def work():
            try:
                return run(request, path, self.pool, live.progress, live.segment)
            except ClientGone:
                log.info("a streaming client left: its run stopped (%s)", filename)
                raise

        try:
            future = self.queue.submit(work)
        except QueueFull as full:
            _remove(path)
            raise queue_full(full.retry_after) from None
        future.add_done_callback(lambda _f: _remove(path))
        future.add_done_callback(live.finished)
        try:
            first = await live.items.get()
        except asyncio.CancelledError:
            live.abandoned = True  # the client left while its request waited
            future.cancel()
            raise
        if first[0] == "end":
            try:
                first[1].result()
            except CancelledError:  # the server is shutting down: it never started
                raise shutting_down() from None
            except Exception as e:
                raise as_api_error(e, filename, path) from None
        return live, first

    def stream_error(self, error: BaseException, filename: str, path: str) -> dict:
        """OpenAI's error object for a run that failed after its stream began."""
        return as_api_error(error, filename, path).body()

    def check_room(self) -> None:
        """429 before the upload is read, when the queue is already full."""
        if self.queue.queued >= self.config.max_queued:
            raise queue_full(self.queue.retry_after())

    def submit_job(self, job_id: str) -> None:
        self.queue.submit(lambda: self._run_job(job_id), bounded=False)

    def cancel_job(self, job_id: str) -> bool:
        with self._cancel_lock:
            self._cancelled.add(job_id)
        return self.jobs.cancel(job_id)

    def _run_job(self, job_id: str) -> None:
        if not self.jobs.start(job_id):
            return  # cancelled while queued
        row = self.jobs.get(job_id)
        request = AudioRequest.from_record(json.loads(row["request"]))

        def progress(stage: str, done: float, total: float) -> None:
            if job_id in self._cancelled:
                raise JobCancelled(job_id)
            self.jobs.progress(job_id, stage, float(done), float(total))

        try:
            transcript = run(request, row["upload"], self.pool, progress)
        except JobCancelled:
            return
        except BaseException as e:
            if job_id in self._cancelled:
                return
            error = as_api_error(e, "the upload", row["upload"])
            self.jobs.fail(job_id, error.status, error.body())
            return
        finally:
            with self._cancel_lock:
                self._cancelled.discard(job_id)
        self.jobs.succeed(job_id, transcript.to_record())

    def begin_shutdown(self) -> None:
        """On SIGTERM/SIGINT: new requests get 503 and those still waiting for
        a worker are answered 503 now (queued jobs stay queued on disk, for
        the next start); the runs under way finish."""
        self.closing = True
        cancelled = self.queue.cancel_waiting()
        if cancelled:
            log.info("shutting down: %d waiting requests answered 503", cancelled)

    def close(self) -> None:
        self.closing = True
        self.queue.close(wait=True)
        self.pool.close()
        self.jobs.close()
