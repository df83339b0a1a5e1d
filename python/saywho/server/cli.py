"""``saywho serve``: OpenAI's audio API on a port (pip install "saywho[server]")."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ..cli_options import MODEL_HELP, add_model_options, positive
from ..native import _core
from .config import ServerConfig


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="saywho serve",
        description="OpenAI's /v1/audio API with speakers; interactive docs at /docs.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    add_model_options(p, "(served as whisper-1) " + MODEL_HELP)
    p.add_argument(
        "--api-key",
        default=os.environ.get("SAYWHO_API_KEY"),
        help="require Authorization: Bearer KEY (default: SAYWHO_API_KEY; none: open)",
    )
    p.add_argument(
        "--workers",
        type=positive,
        default=1,
        help="runs at once (default 1: one per GPU; on the CPU the cores are split among them)",
    )
    p.add_argument(
        "--max-queued",
        type=positive,
        default=32,
        help="requests that may wait for a worker before others get 429 (default 32)",
    )
    p.add_argument("--max-upload-mb", type=positive, default=500, help="largest upload (500)")
    p.add_argument(
        "--data-dir", default="saywho-data", help="jobs database and uploads (./saywho-data)"
    )
    p.add_argument(
        "--job-ttl-hours", type=float, default=24.0, help="finished jobs are kept this long (24)"
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        import uvicorn

        from .app import create_app
    except ImportError as e:
        print(f'saywho serve: {e.name} is missing: pip install "saywho[server]"', file=sys.stderr)
        return 2

    model = args.model
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    config = ServerConfig(
        model=model,
        device=args.device,
        compute_type=args.compute_type,
        api_key=args.api_key or None,
        workers=args.workers,
        max_queued=args.max_queued,
        max_upload_mb=args.max_upload_mb,
        data_dir=args.data_dir,
        job_ttl_s=args.job_ttl_hours * 3600.0,
    )
    try:
        app = create_app(config)

        class Server(uvicorn.Server):
            def handle_exit(self, sig, frame) -> None:
                # before uvicorn waits for the open requests: the queued ones get 503
                app.state.saywho.begin_shutdown()
                super().handle_exit(sig, frame)

        server = Server(
            uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level)
        )
        server.run()
    except _core.SaywhoError as e:
        print(f"saywho serve: {e}", file=sys.stderr)
        return 2
    return 0
