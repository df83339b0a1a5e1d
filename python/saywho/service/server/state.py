"""What the routes share: the settings, the Pipelines, the queue and the jobs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
from concurrent.futures import CancelledError

from ..._internal.native import _core
from .config import ServerConfig
from .errors import APIError, from_saywho, internal, shutting_down
from .fields import AudioRequest
from .jobs import JobStore
from .pool import PipelinePool
from .prometheus import Metrics
from .runner import run as run_request
from .streaming import ClientGone, LiveRun
from .work_queue import QueueFull, WorkQueue

log = logging.getLogger("saywho.server")


class JobCancelled(Exception):
    pass


def as_api_error(
    error: BaseException,
    filename: str | None = None,
    path: str | None = None,
    model: str | None = None,
):
    """Any failure of a run as the APIError a client gets (logged if unexpected);
    ``model`` is the model field as the client sent it."""
    if isinstance(error, APIError):
        return error
    if isinstance(error, CancelledError):  # the queue closed before it ran
        return shutting_down()
    if isinstance(error, _core.SaywhoError):
        api = from_saywho(error, model=model)
        if path and filename is not None:  # the client's name, not the spool's
            api.message = api.message.replace(path, filename)
        return api
    log.error("request failed", exc_info=error)
    return internal()


def _size(path: str) -> int:
    with contextlib.suppress(OSError):
        return os.path.getsize(path)
    return 0


async def _disconnect(receive) -> None:
    """Returns when the client has gone (the body was read: only a
    disconnect is left to receive)."""
    while (await receive())["type"] != "http.disconnect":
        pass


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
        self.pool = PipelinePool(
            config.model,
            config.device,
            config.compute_type,
            config.workers,
            max_models=config.max_models,
            ttl_s=config.model_ttl_s,
            model_folders=config.model_folders,
        )
        self.queue = WorkQueue(config.workers, config.max_queued)
        self.jobs = JobStore(config.data_dir, config.job_ttl_s)
        self.metrics = Metrics()
        self._cancelled: set[str] = set()
        self._cancel_lock = threading.Lock()

    def _limits(self, progress, timed: bool):
        """``progress`` behind the operator's limits: audio longer than
        --max-audio-s (told by the decode stage, before any long one) and,
        for a request (``timed``), a run past --max-request-s stop the run."""
        start = time.monotonic()
        max_audio, max_time = self.config.max_audio_s, self.config.max_request_s

        def hear(stage: str, done: float, total: float) -> None:
            if stage == "decode" and max_audio > 0 and total > max_audio:
                raise APIError(
                    413,
                    f"The audio is {total:.0f} s long; this server takes at most {max_audio:g} s",
                    param="file",
                    code="audio_too_long",
                )
            if timed and max_time > 0 and time.monotonic() - start > max_time:
                raise APIError(
                    504,
                    f"The run took over this server's limit of {max_time:g} s and was stopped; "
                    "send long files to /v1/jobs",
                    type="server_error",
                    code="request_timeout",
                )
            if progress is not None:
                progress(stage, done, total)

        return hear

    def run(self, request: AudioRequest, path: str, progress=None, on_segment=None, timed=True):
        """One run on a worker, within the limits, counted in /metrics."""
        start = time.perf_counter()
        outcome, seconds = "error", 0.0
        progress = self._limits(progress, timed)
        try:
            transcript = run_request(request, path, self.pool, progress, on_segment)
            outcome, seconds = "ok", transcript.duration
            return transcript
        except ClientGone:
            outcome = "client_gone"
            raise
        finally:
            self.metrics.run(request.model, outcome, seconds, time.perf_counter() - start)

    def start(self) -> None:
        """Loads the default model (a bad --model fails here, not at the first
        request) and resumes the jobs a previous process left."""
        self.pool.get(self.config.model, None)
        self.jobs.expire()
        for job_id in self.jobs.recover():
            self.submit_job(job_id)

    async def run_now(self, request: AudioRequest, path: str, filename: str, receive=None):
        """The synchronous endpoint: queued (429 when full), awaited. With
        ``receive`` (the request's ASGI receive, its body already read), a
        client that disconnects stops its run at the next window, or takes
        it off the queue: nobody would read the answer."""
        gone = threading.Event()

        def progress(_stage, _done, _total) -> None:
            if gone.is_set():
                raise ClientGone()

        try:
            future = self.queue.submit(lambda: self.run(request, path, progress), size=_size(path))
        except QueueFull as full:
            raise queue_full(full.retry_after) from None
        waiting = asyncio.wrap_future(future)
        watch = asyncio.ensure_future(_disconnect(receive)) if receive is not None else None
        try:
            if watch is not None:
                await asyncio.wait((waiting, watch), return_when=asyncio.FIRST_COMPLETED)
                if not waiting.done():  # the client left first
                    gone.set()
                    future.cancel()
                    log.info("a client left: its run stopped (%s)", filename)
                    with contextlib.suppress(BaseException):
                        await waiting
                    raise ClientGone()
            return await waiting
        except asyncio.CancelledError:
            gone.set()
            if future.cancelled():  # the server is shutting down: it never started
                raise shutting_down() from None
            raise  # the request itself was cancelled
        except ClientGone:
            raise
        except Exception as e:
            raise as_api_error(e, filename, path, request.model) from None
        finally:
            if watch is not None:
                watch.cancel()

    async def run_streaming(self, request: AudioRequest, path: str, filename: str):
        """``stream=true``: queued as run_now, but answered from the run's
        first sign of life on. Returns (live run, its first item); an error
        before that is raised as the APIError a client gets. The upload is
        removed when the run ends, however it ends."""
        live = LiveRun(asyncio.get_running_loop())

        def work():
            try:
                return self.run(request, path, live.progress, live.segment)
            except ClientGone:
                log.info("a streaming client left: its run stopped (%s)", filename)
                raise

        try:
            future = self.queue.submit(work, size=_size(path))
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
                raise as_api_error(e, filename, path, request.model) from None
        return live, first

    def stream_error(self, error: BaseException, filename: str, path: str, model: str) -> dict:
        """OpenAI's error object for a run that failed after its stream began."""
        return as_api_error(error, filename, path, model).body()

    def check_room(self) -> None:
        """429 before the upload is read, when the queue is already full."""
        if self.queue.queued >= self.config.max_queued:
            raise queue_full(self.queue.retry_after())

    def check_job_room(self) -> None:
        """429 before a job's upload is read, at --max-jobs queued or running."""
        if self.jobs.active() >= self.config.max_jobs:
            raise APIError(
                429,
                f"{self.config.max_jobs} jobs are queued or running (this server's "
                "--max-jobs); retry when some have finished",
                type="rate_limit_error",
                code="too_many_jobs",
                headers={"Retry-After": str(self.queue.retry_after())},
            )

    def submit_job(self, job_id: str, size: int = 0) -> None:
        self.queue.submit(lambda: self._run_job(job_id), bounded=False, size=size)

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
            transcript = self.run(request, row["upload"], progress, timed=False)
        except JobCancelled:
            return
        except BaseException as e:
            if job_id in self._cancelled:
                return
            error = as_api_error(e, "the upload", row["upload"], request.model)
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
