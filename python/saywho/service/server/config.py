"""The server's settings, as ``saywho serve`` parsed them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ServerConfig:
    model: str  # the default model: a name saywho loads or a folder
    # more models clients may name: NAME -> a folder on the server (--model-folder)
    model_folders: dict[str, str] = field(default_factory=dict)
    device: str = "auto"
    compute_type: str = "default"
    api_keys: tuple[str, ...] = ()  # none: open; each key sees only its own jobs
    workers: int = 1
    max_queued: int = 32  # synchronous requests waiting beyond the running ones
    max_jobs: int = 1000  # jobs queued or running (on disk) before /v1/jobs answers 429
    max_upload_mb: int = 500
    data_dir: str = "saywho-data"
    job_ttl_s: float = 24 * 3600.0
    max_models: int = 4  # Pipelines loaded at once (the default model counts)
    model_ttl_s: float = 300.0  # speaches' stt_model_ttl: idle this long, unloaded; -1 never
    max_audio_s: float = 0.0  # longer audio is a 413 once decoded; 0: no limit
    max_request_s: float = 0.0  # a request's run stopped past this (504); jobs exempt; 0: none
    body_timeout_s: float = 30.0  # a body that sends nothing this long is dropped (408)
    vad_filter: bool = True  # the service's default, as speaches': silence is not transcribed
    cors_origins: tuple[str, ...] = field(default_factory=tuple)

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb << 20
