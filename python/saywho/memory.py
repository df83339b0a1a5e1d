"""Memory reports and the stage checkpoint lines users grep their logs for.

A checkpoint line reads
``[GPU Memory] After Whisper Cleanup: Allocated 0.18 GB (0.7%) | Reserved 0.50 GB (2.0%) |
Free 20.1 GB | Total 22.5 GB``; Allocated and Reserved are saywho's own pools,
Free and Total the device's (or, on the CPU, the machine's). Above 70% and
85% of the device in use, a warning follows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("saywho")

GB = 1024**3
WARN_FRACTION = 0.70
CRITICAL_FRACTION = 0.85


@dataclass(frozen=True)
class MemoryReport:
    """Bytes held by saywho's pools on one device, and the device's own state.

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

    @classmethod
    def from_counts(cls, device: str, counts: dict, mapped: int = 0) -> MemoryReport:
        return cls(
            device=device,
            allocated=counts["allocated"],
            reserved=counts["reserved"],
            peak_allocated=counts["peak_allocated"],
            peak_reserved=counts["peak_reserved"],
            live_blocks=counts["live_blocks"],
            free=counts["free"],
            total=counts["total"],
            mapped=mapped,
        )

    @property
    def used_fraction(self) -> float:
        """Share of the whole device in use, by anyone (other processes too)."""
        return (self.total - self.free) / self.total if self.total else 0.0

    def line(self, stage: str) -> str:
        label = "GPU" if self.device == "cuda" else "CPU"

        def pct(n: int) -> str:
            return f"{100.0 * n / self.total:.1f}%" if self.total else "n/a"

        mapped = f" | Mapped {self.mapped / GB:.2f} GB" if self.mapped else ""
        return (
            f"[{label} Memory] {stage}: "
            f"Allocated {self.allocated / GB:.2f} GB ({pct(self.allocated)}) | "
            f"Reserved {self.reserved / GB:.2f} GB ({pct(self.reserved)}){mapped} | "
            f"Free {self.free / GB:.2f} GB | Total {self.total / GB:.2f} GB"
        )


def log_checkpoint(report: MemoryReport, stage: str) -> None:
    """Logs the checkpoint line, then a warning when the device is filling up."""
    log.info(report.line(stage))
    used = report.used_fraction
    if used > CRITICAL_FRACTION:
        log.warning(
            "%s memory is %.0f%% used (above %.0f%%): the next stage may run out of memory; "
            "close other models or use a smaller one",
            report.device.upper(),
            100 * used,
            100 * CRITICAL_FRACTION,
        )
    elif used > WARN_FRACTION:
        log.warning(
            "%s memory is %.0f%% used (above %.0f%%)",
            report.device.upper(),
            100 * used,
            100 * WARN_FRACTION,
        )
