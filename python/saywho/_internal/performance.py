"""The one shape of ``performance``: transcribe, diarize and process report alike.

::

    {
        "audio_seconds": 30.0,
        "total_seconds": 3.1,           # wall time of the whole call
        "x_realtime": 9.7,              # audio_seconds / total_seconds
        "stages": {                     # in the order they ran
            "decode": {"seconds": 0.02, "x_realtime": 1500.0},
            "diarization": {"seconds": 1.9, "x_realtime": 15.8,
                            "peak_allocated_bytes": 52_000_000},
            ...
        },
        "peak_allocated_bytes": 52_000_000,  # the device pool's high-water mark
        "peak_rss_bytes": 410_000_000,       # the process's, as the OS counts it
        "memory": {                          # the device at the end of the call
            "device": "cpu", "source": "host",   # "host", "cgroup" or "device" (GPU)
            "available_bytes": 20_100_000_000, "total_bytes": 25_700_000_000,
            "used_fraction": 0.2179,
        },
    }

``memory`` is saywho._internal.memory's MemoryReport.figures(): on the CPU the figures of
system_memory() (the tighter of the machine's and the cgroup's limits), on the
GPU the device's free and total; the same the checkpoint lines show.

A stage's ``peak_allocated_bytes`` is there where a memory checkpoint followed
it; a stage made of parts (process's diarization and transcription) lists them
under its own ``"stages"``, in the same shape. Stage names: transcribe has decode and transcription; diarize has decode,
segmentation, embeddings, clustering and reconstruction; process has decode,
diarization, transcription and alignment.
"""

from __future__ import annotations

import resource
import time


def _ratio(audio_seconds: float, seconds: float) -> float | None:
    return round(audio_seconds / seconds, 2) if seconds > 0 else None


class Performance:
    """Collects one call's stage times; ``report()`` gives the dict above."""

    def __init__(self, audio_seconds: float = 0.0, start: float | None = None):
        self.audio_seconds = audio_seconds
        self.start = time.perf_counter() if start is None else start
        self.stages: dict[str, dict] = {}

    def add(
        self,
        name: str,
        seconds: float,
        peak_allocated_bytes: int | None = None,
        parts: dict[str, dict] | None = None,
    ) -> None:
        """Records ``seconds`` of stage ``name`` (added up if it runs again);
        ``parts`` are its own stages, from another call's report."""
        stage = self.stages.setdefault(name, {"seconds": 0.0})
        stage["seconds"] = round(stage["seconds"] + seconds, 4)
        stage["x_realtime"] = _ratio(self.audio_seconds, stage["seconds"])
        if peak_allocated_bytes is not None:
            stage["peak_allocated_bytes"] = int(peak_allocated_bytes)
        if parts:
            stage["stages"] = {k: dict(v) for k, v in parts.items()}

    def add_call(self, name: str, report: dict) -> None:
        """Records another call's whole report (``Pipeline.diarize``'s within
        ``process``) as stage ``name``, with its stages as the parts."""
        self.add(
            name,
            report["total_seconds"],
            report.get("peak_allocated_bytes"),
            report.get("stages"),
        )

    def report(self, peak_allocated_bytes: int | None = None, memory=None) -> dict:
        """The dict of the module's docstring, timed up to now.

        ``peak_allocated_bytes`` is the pool's peak for the whole call where the
        caller knows it; otherwise the largest of the stages'. ``memory``: the
        MemoryReport that ends the call (None where there is none).
        """
        total = time.perf_counter() - self.start
        if peak_allocated_bytes is None:
            peaks = [s.get("peak_allocated_bytes", 0) for s in self.stages.values()]
            peak_allocated_bytes = max(peaks, default=0)
        return {
            "audio_seconds": round(self.audio_seconds, 3),
            "total_seconds": round(total, 4),
            "x_realtime": _ratio(self.audio_seconds, total),
            "stages": {name: dict(stage) for name, stage in self.stages.items()},
            "peak_allocated_bytes": int(peak_allocated_bytes),
            # ru_maxrss is in KiB on Linux: the process's high-water mark so far
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "memory": memory.figures() if memory is not None else None,
        }
