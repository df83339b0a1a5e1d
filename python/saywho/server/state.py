"""What the routes share: the settings, the Pipelines, the queue and the jobs."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from concurrent.futures import CancelledError

from ..native import _core
from .config import ServerConfig
from .errors import APIError, from_saywho, internal, shutting_down
from .fields import AudioRequest
from .jobs import JobStore
from .pool import PipelinePool
from .runner import run
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
