"""GET /metrics: the server's counters in Prometheus' text format (0.0.4).

Written by hand, no client library: a few counters and gauges, each line
``name{label="value"} number`` after its ``# HELP`` and ``# TYPE``. Names
follow Prometheus' conventions (``_total`` for counters, base units:
seconds, bytes). Counters live in memory and start at 0 with the process.
"""

from __future__ import annotations

import os
import resource
import threading
from collections import defaultdict

PREFIX = "saywho_"


def rss_bytes() -> int:
    """The process's resident memory now (Linux's /proc; else its peak)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak * 1024  # Linux and BSD give KiB


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in sorted(labels.items())) + "}"


def _number(value: float) -> str:
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Metrics:
    """Counters the routes and workers add to; ``text()`` renders them."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple, int] = defaultdict(int)  # (path, status) -> n
        self.audio_seconds: dict[str, float] = defaultdict(float)  # model -> s of audio
        self.run_seconds: dict[str, float] = defaultdict(float)  # model -> s of work
        self.runs: dict[tuple, int] = defaultdict(int)  # (model, outcome) -> n

    def request(self, path: str, status: int) -> None:
        with self._lock:
            self.requests[(path, status)] += 1

    def run(self, model: str, outcome: str, audio_s: float, run_s: float) -> None:
        with self._lock:
            self.runs[(model, outcome)] += 1
            self.audio_seconds[model] += audio_s
            self.run_seconds[model] += run_s

    def text(self, gauges: dict[str, tuple[str, list[tuple[dict, float]]]]) -> str:
        """The exposition; ``gauges``: name -> (help, [(labels, value)]), read now."""
        with self._lock:
            families = {
                "http_requests_total": (
                    "counter",
                    "HTTP answers by route and status code",
                    [({"path": p, "code": str(c)}, n) for (p, c), n in self.requests.items()],
                ),
                "runs_total": (
                    "counter",
                    "transcription runs by model and outcome (ok, error, client_gone)",
                    [({"model": m, "outcome": o}, n) for (m, o), n in self.runs.items()],
                ),
                "audio_seconds_total": (
                    "counter",
                    "seconds of audio the runs processed, by model",
                    [({"model": m}, s) for m, s in self.audio_seconds.items()],
                ),
                "run_seconds_total": (
                    "counter",
                    "seconds the runs took, by model",
                    [({"model": m}, s) for m, s in self.run_seconds.items()],
                ),
                "realtime_factor": (
                    "gauge",
                    "seconds of audio per second of work since start (x realtime), by model",
                    [
                        ({"model": m}, self.audio_seconds[m] / s)
                        for m, s in self.run_seconds.items()
                        if s > 0
                    ],
                ),
            }
        for name, (help_text, samples) in gauges.items():
            families[name] = ("gauge", help_text, samples)
        lines = []
        for name, (kind, help_text, samples) in families.items():
            lines.append(f"# HELP {PREFIX}{name} {help_text}")
            lines.append(f"# TYPE {PREFIX}{name} {kind}")
            for labels, value in samples:
                lines.append(f"{PREFIX}{name}{_labels(labels)} {_number(value)}")
        return "\n".join(lines) + "\n"
