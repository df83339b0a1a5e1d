"""Loaded Pipelines, one per (model, compute type, device, diarization), reused.

A Pipeline loads on first use; its lock lets one request use it at a time
(the core's buffers belong to one run). The CPU threads are split among the
workers so that two runs never fight over the same cores.

Memory is the operator's to bound: at most ``max_models`` Pipelines stay
loaded (the least recently used idle one is closed to make room), and one
idle for ``ttl_s`` seconds is closed (speaches' ``stt_model_ttl``; -1:
never). The default model, loaded at start, stays. A name is checked before
anything loads, and a Pipeline whose load failed is never kept: a client
cannot fill the server with Pipelines by naming things that do not exist.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..._internal.native import ModelError
from ...api.pipeline import Pipeline
from ...models.pyannote_hub import resolve_pipeline
from .errors import APIError

log = logging.getLogger("saywho.server")


@dataclass
class Loaded:
    pipeline: Pipeline
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    users: int = 0  # requests holding it (waiting for its lock or running): never closed then
    last_used: float = field(default_factory=time.monotonic)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def diarization_unavailable(name: str, why: str) -> APIError:
    return APIError(
        400,
        f"The diarization pipeline {name!r} cannot be loaded: {why}",
        param="diarization",
        code="diarization_unavailable",
    )


class PipelinePool:
    def __init__(
        self,
        default_model: str,
        device: str,
        compute_type: str,
        workers: int,
        max_models: int = 4,
        ttl_s: float = -1.0,
        model_folders: dict[str, str] | None = None,
    ):
        self.default_model = default_model
        self.model_folders = dict(model_folders or {})  # the operator's NAME -> folder
        self.device = device
        self.compute_type = compute_type
        self.threads = max(1, cpu_count() // max(1, workers))
        self.max_models = max_models
        self.ttl_s = ttl_s
        self._loaded: dict[tuple, Loaded] = {}
        self._loading = threading.Lock()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        if ttl_s >= 0:
            self._sweeper = threading.Thread(target=self._sweep, name="saywho-ttl", daemon=True)
            self._sweeper.start()

    def key(self, model: str, diarization: str | None) -> tuple:
        return (model, self.compute_type, self.device, diarization)

    @contextlib.contextmanager
    def use(self, model: str, diarization: str | None) -> Iterator[Loaded]:
        """The Pipeline for ``model`` (loaded the first time), its lock held.

        saywho's ModelError/DeviceError propagate (the route makes them 404
        and 503); a diarization pipeline that cannot be found is a 400."""
        loaded = self._acquire(model, diarization)
        try:
            with loaded.lock:
                yield loaded
        finally:
            with self._loading:
                loaded.users -= 1
                loaded.last_used = time.monotonic()

    def get(self, model: str, diarization: str | None) -> Loaded:
        """Loads ``model`` if it is not (POST /api/ps); counts no request."""
        loaded = self._acquire(model, diarization, count=False)
        with self._loading:
            loaded.users -= 1
        return loaded

    def _acquire(self, model: str, diarization: str | None, count: bool = True) -> Loaded:
        key = self.key(model, diarization)
        with self._loading:
            loaded = self._loaded.get(key)
            if loaded is None:
                if diarization is not None:
                    try:  # the name first: a bogus one never loads a Whisper model
                        resolve_pipeline(diarization)
                    except ModelError as e:
                        raise diarization_unavailable(diarization, str(e)) from None
                self._make_room()
                log.info("loading %s (%s, %s)", model, self.compute_type, self.device)
                pipeline = Pipeline(
                    model=model,
                    device=self.device,
                    threads=self.threads,
                    compute_type=self.compute_type,
                    diarization=diarization,
                )
                loaded = self._loaded[key] = Loaded(pipeline)
            if count:
                loaded.requests += 1
            loaded.users += 1
            loaded.last_used = time.monotonic()
            return loaded

    def _make_room(self) -> None:
        """Closes the least recently used idle Pipeline when the cap is reached
        (the caller holds ``_loading``); none idle: a 503 to retry later."""
        if len(self._loaded) < self.max_models:
            return
        idle = [
            (loaded.last_used, key)
            for key, loaded in self._loaded.items()
            if loaded.users == 0 and key != self.key(self.default_model, None)
        ]
        if not idle:
            raise APIError(
                503,
                f"{len(self._loaded)} models are loaded and busy (this server's "
                "--max-models); retry later or use a loaded model",
                type="server_error",
                param="model",
                code="model_capacity",
                headers={"Retry-After": "5"},
            )
        self._close(min(idle)[1])

    def _close(self, key: tuple) -> None:
        loaded = self._loaded.pop(key)
        log.info("unloading %s (diarization %s)", key[0], key[3])
        loaded.pipeline.close()

    def discard(self, model: str, diarization: str | None) -> None:
        """Forgets a Pipeline whose diarization failed to load, once idle."""
        key = self.key(model, diarization)
        with self._loading:
            loaded = self._loaded.get(key)
            if loaded is not None and loaded.users == 0:
                self._close(key)

    def unload(self, model: str) -> int:
        """Closes every idle Pipeline of ``model`` (DELETE /api/ps); how many.
        A busy one is a 409; the default model stays loaded."""
        with self._loading:
            keys = [k for k in self._loaded if k[0] == model]
            if any(self._loaded[k].users for k in keys):
                raise APIError(
                    409, f"The model {model!r} is in use; unload it when idle", code="model_busy"
                )
            if self.key(self.default_model, None) in keys:
                raise APIError(
                    409,
                    "The server's default model stays loaded",
                    param="model",
                    code="default_model",
                )
            for k in keys:
                self._close(k)
            return len(keys)

    def _sweep(self) -> None:
        every = min(max(self.ttl_s / 4, 0.05), 10.0)
        while not self._stop.wait(every):
            now = time.monotonic()
            with self._loading:
                for key, loaded in list(self._loaded.items()):
                    expired = now - loaded.last_used >= self.ttl_s
                    if expired and loaded.users == 0 and key != self.key(self.default_model, None):
                        self._close(key)

    def describe(self, name=lambda model: model) -> list[dict]:
        """What /health shows of each loaded Pipeline, its memory included;
        ``name`` turns a model into what clients call it (no paths)."""
        with self._loading:
            items = list(self._loaded.items())
        out = []
        for (model, compute_type, _device, diarization), loaded in items:
            p = loaded.pipeline
            if p.closed:
                continue
            memory = p.memory()
            out.append(
                {
                    "model": name(model),
                    "compute_type": compute_type,
                    "device": p.device_name,
                    "diarization": diarization,
                    "requests": loaded.requests,
                    "busy": loaded.lock.locked(),
                    "idle_s": round(time.monotonic() - loaded.last_used, 1),
                    "memory": {
                        "allocated_bytes": memory.allocated,
                        "reserved_bytes": memory.reserved,
                        "peak_allocated_bytes": memory.peak_allocated,
                        "mapped_bytes": memory.mapped,
                        "device_free_bytes": memory.free,
                        "device_total_bytes": memory.total,
                        "source": memory.source,
                    },
                }
            )
        return out

    def close(self) -> None:
        self._stop.set()
        with self._loading:
            for loaded in self._loaded.values():
                with loaded.lock:
                    loaded.pipeline.close()
            self._loaded.clear()
