"""Loaded Pipelines, one per (model, compute type, device, diarization), reused.

A Pipeline loads on first use and stays loaded; its lock lets one request use
it at a time (the core's buffers belong to one run). The CPU threads are split
among the workers so that two runs never fight over the same cores.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field

from ..pipeline import Pipeline

log = logging.getLogger("saywho.server")


@dataclass
class Loaded:
    pipeline: Pipeline
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class PipelinePool:
    def __init__(self, default_model: str, device: str, compute_type: str, workers: int):
        self.default_model = default_model
        self.device = device
        self.compute_type = compute_type
        self.threads = max(1, cpu_count() // max(1, workers))
        self._loaded: dict[tuple, Loaded] = {}
        self._loading = threading.Lock()

    def get(self, model: str, diarization: str | None) -> Loaded:
        """The Pipeline for ``model`` (loading it the first time), with its lock.

        saywho's ModelError/DeviceError propagate: the route turns them into
        404 (unknown model) and 503 (no such device)."""
        key = (model, self.compute_type, self.device, diarization)
        with self._loading:
            loaded = self._loaded.get(key)
            if loaded is None:
                log.info("loading %s (%s, %s)", model, self.compute_type, self.device)
                pipeline = Pipeline(
                    model=model,
                    device=self.device,
                    threads=self.threads,
                    compute_type=self.compute_type,
                    diarization=diarization,
                )
                loaded = self._loaded[key] = Loaded(pipeline)
            loaded.requests += 1
            return loaded

    def describe(self) -> list[dict]:
        """What /health shows of each loaded Pipeline, its memory included."""
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
                    "model": model,
                    "compute_type": compute_type,
                    "device": p.device_name,
                    "diarization": diarization,
                    "requests": loaded.requests,
                    "busy": loaded.lock.locked(),
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
        with self._loading:
            for loaded in self._loaded.values():
                with loaded.lock:
                    loaded.pipeline.close()
            self._loaded.clear()
