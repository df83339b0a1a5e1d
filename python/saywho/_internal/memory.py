"""Memory reports and the stage checkpoint lines users grep their logs for.

A checkpoint line reads
``[GPU Memory] After Whisper Cleanup: Allocated 0.18 GiB (0.7%) | Reserved 0.50 GiB (2.0%) |
Audio 0.70 GiB | Free 20.1 GiB | Total 22.5 GiB (device)``; Allocated and Reserved are
saywho's own pools, Audio the decoded samples of the recording being processed (host
memory, shown while they are alive), Free and Total what the device has left and holds.
Every figure is in GiB (2**30 bytes) and labelled so. On the CPU, Free is what this
process can still have and Total the limit it runs under, from the machine
(``(host)``: /proc/meminfo's MemAvailable, so page cache counts as free) or from
its cgroup (``(cgroup)``: a container's, a Colab runtime's limit), whichever is
tighter: ``system_memory()``, the one reader every report uses (checkpoints,
``Pipeline.memory()``, ``performance["memory"]``, the service's health).
Above 70% and 85% of that in use, a warning follows, once per stage.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass

from .native import _core

log = logging.getLogger("saywho")

GB = 1024**3  # bytes of the unit the lines print, labelled GiB
WARN_FRACTION = 0.70
CRITICAL_FRACTION = 0.85
# The folder system_memory() reads proc/meminfo, proc/self/cgroup,
# proc/self/mountinfo and the cgroup files under: None is this machine's
# own. set_memory_root() moves it (a host's view mounted elsewhere; a test's
# real-shaped files), for every report at once.
_memory_root: str | None = None


def set_memory_root(root: str | os.PathLike | None) -> str | None:
    """Read the memory files under ``root`` from now on (None: this
    machine's); returns the root read before, to put back."""
    global _memory_root
    before = _memory_root
    _memory_root = None if root is None else os.fspath(root)
    return before


@dataclass(frozen=True)
class SystemMemory:
    """Host memory this process can still have, in bytes.

    ``total`` and ``available`` are the tighter of two limits: the machine's
    (MemTotal, MemAvailable) and the process's cgroup's (its limit, and the
    limit less what the cgroup uses, not counting the file cache the kernel
    reclaims first). ``source`` says which: "host" or "cgroup". Both sides
    are kept; the cgroup's are None when no limit is set."""

    total: int
    available: int
    source: str
    host_total: int
    host_available: int
    cgroup_limit: int | None = None
    cgroup_used: int | None = None
    cgroup_version: int | None = None

    @property
    def used_fraction(self) -> float:
        return (self.total - self.available) / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        """Plain JSON-ready figures (a health endpoint's, a log record's)."""
        figures = asdict(self)
        figures["used_fraction"] = round(self.used_fraction, 4)
        return figures


def system_memory(root: str | os.PathLike | None = None) -> SystemMemory:
    """This process's host memory, read now (a few small files, microseconds).

    ``root`` is prefixed to every path read (tests write /proc and cgroup
    files under a folder); None reads under set_memory_root()'s folder, by
    default this machine's own files."""
    if root is None:
        root = _memory_root
    m = _core.host_memory(root)
    limited = m["cgroup_version"] != 0
    return SystemMemory(
        total=m["total"],
        available=m["available"],
        source=m["source"],
        host_total=m["host_total"],
        host_available=m["host_available"],
        cgroup_limit=m["cgroup_limit"] if limited else None,
        cgroup_used=m["cgroup_used"] if limited else None,
        cgroup_version=m["cgroup_version"] if limited else None,
    )


@dataclass(frozen=True)
class MemoryReport:
    """Bytes held by saywho's pools on one device, and the device's own state.

    ``free`` and ``total``: the GPU's, or on the CPU ``system_memory()``'s
    (available and the tighter limit); ``source`` says where they came from:
    "device" (the GPU), "host" or "cgroup".
    ``mapped``: bytes of model files a CPU model computes from where they lie
    (a Whisper file's float16 matrices, memory-mapped): page cache, shared,
    not in the pools; the line shows them when there are any."""

    device: str
    allocated: int
    reserved: int
    peak_allocated: int
    peak_reserved: int
    live_blocks: int
    free: int
    total: int
    mapped: int = 0
    source: str = "device"
    audio: int = 0  # the decoded samples alive now (host memory), bytes
    audio_on_disk: int = 0  # a long recording's samples in a temporary file (audio_store)

    @classmethod
    def from_counts(
        cls,
        device: str,
        counts: dict,
        mapped: int = 0,
        system: SystemMemory | None = None,
        audio: int = 0,
        audio_on_disk: int = 0,
    ) -> MemoryReport:
        """``counts``: a Runtime's memory(); ``system``, on the CPU, the
        figures that replace the device's free/total."""
        return cls(
            device=device,
            allocated=counts["allocated"],
            reserved=counts["reserved"],
            peak_allocated=counts["peak_allocated"],
            peak_reserved=counts["peak_reserved"],
            live_blocks=counts["live_blocks"],
            free=system.available if system else counts["free"],
            total=system.total if system else counts["total"],
            mapped=mapped,
            source=system.source if system else "device",
            audio=audio,
            audio_on_disk=audio_on_disk,
        )

    @property
    def used_fraction(self) -> float:
        """Share of the device (or the limit) in use, by anyone (other processes too)."""
        return (self.total - self.free) / self.total if self.total else 0.0

    def figures(self) -> dict:
        """What ``performance["memory"]`` holds: the device's state at the report."""
        return {
            "device": self.device,
            "source": self.source,
            "available_bytes": self.free,
            "total_bytes": self.total,
            "used_fraction": round(self.used_fraction, 4),
        }

    def line(self, stage: str) -> str:
        label = "GPU" if self.device == "cuda" else "CPU"

        def pct(n: int) -> str:
            return f"{100.0 * n / self.total:.1f}%" if self.total else "n/a"

        mapped = f" | Mapped {self.mapped / GB:.2f} GiB" if self.mapped else ""
        audio = f" | Audio {self.audio / GB:.2f} GiB" if self.audio or self.audio_on_disk else ""
        if self.audio_on_disk:  # file-backed: read a window at a time, not held
            audio += f" (+{self.audio_on_disk / GB:.2f} GiB on disk)"
        return (
            f"[{label} Memory] {stage}: "
            f"Allocated {self.allocated / GB:.2f} GiB ({pct(self.allocated)}) | "
            f"Reserved {self.reserved / GB:.2f} GiB ({pct(self.reserved)}){mapped}{audio} | "
            f"Free {self.free / GB:.2f} GiB | Total {self.total / GB:.2f} GiB ({self.source})"
        )


def memory_report(runtime, mapped: int = 0, audio: int = 0, audio_on_disk: int = 0) -> MemoryReport:
    """A Runtime's pools with its device's figures: on the CPU system_memory()'s,
    on the GPU the device's free/total; ``audio``: decoded samples' bytes.
    After close() every count is zero."""
    device = runtime.device or "closed"
    system = system_memory() if device == "cpu" else None
    return MemoryReport.from_counts(device, runtime.memory(), mapped, system, audio, audio_on_disk)


def warning_fraction(used: float) -> float | None:
    """The threshold ``used`` is above (0.85 or 0.70), or None."""
    if used > CRITICAL_FRACTION:
        return CRITICAL_FRACTION
    if used > WARN_FRACTION:
        return WARN_FRACTION
    return None


def log_checkpoint(report: MemoryReport, stage: str, warned: dict | None = None) -> None:
    """Logs the checkpoint line, then a warning when the device is filling up.

    ``warned`` (a Pipeline's, stage -> threshold last crossed there) makes it
    once per stage: a stage that runs again warns again only when it crosses
    a higher threshold than last time, or after dropping below."""
    log.info(report.line(stage))
    level = warning_fraction(report.used_fraction)
    if warned is not None:
        before = warned.get(stage)
        warned[stage] = level
        if level is not None and before is not None and before >= level:
            return
    if level is None:
        return
    limit = {"cgroup": "cgroup limit", "host": "machine"}.get(report.source, "device")
    detail = f"{report.free / GB:.2f} GiB of the {limit}'s {report.total / GB:.2f} GiB left"
    if level == CRITICAL_FRACTION:
        log.warning(
            "%s memory is %.0f%% used at %s (above %.0f%%; %s): the next stage may run out "
            "of memory; close other models or use a smaller one",
            report.device.upper(),
            100 * report.used_fraction,
            stage,
            100 * level,
            detail,
        )
    else:
        log.warning(
            "%s memory is %.0f%% used at %s (above %.0f%%; %s)",
            report.device.upper(),
            100 * report.used_fraction,
            stage,
            100 * level,
            detail,
        )
