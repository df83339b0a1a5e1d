"""The server's settings, as ``saywho serve`` parsed them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ServerConfig:
    model: str  # the default model: a name saywho loads or a folder
    device: str = "auto"
    compute_type: str = "default"
    api_key: str | None = None
    workers: int = 1
    max_queued: int = 32  # synchronous requests waiting beyond the running ones
    max_upload_mb: int = 500
    data_dir: str = "saywho-data"
    job_ttl_s: float = 24 * 3600.0

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb << 20
