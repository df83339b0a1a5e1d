"""``saywho serve``: OpenAI's audio API on a port (pip install "saywho[server]")."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from ..._internal import environment
from ..._internal.native import _core
from ...cli.options import MODEL_HELP, add_model_options, positive
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
        "--model-folder",
        action="append",
        default=[],
        metavar="NAME=FOLDER",
        help="another model clients may name: NAME loads the Whisper model in FOLDER "
        "on this server (repeat for several)",
    )
    p.add_argument(
        "--api-key",
        action="append",
        help="require Authorization: Bearer KEY; repeat for several keys, each seeing only "
        "its own jobs (default: SAYWHO_API_KEY, comma-separated; none: open)",
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
    p.add_argument(
        "--max-jobs",
        type=positive,
        default=1000,
        help="jobs queued or running before /v1/jobs answers 429 (default 1000)",
    )
    p.add_argument("--max-upload-mb", type=positive, default=500, help="largest upload (500)")
    p.add_argument(
        "--max-models",
        type=positive,
        default=4,
        help="models loaded at once; the least recently used idle one is unloaded (default 4)",
    )
    p.add_argument(
        "--model-ttl-s",
        type=float,
        default=300.0,
        help="unload a model idle this long, as speaches' stt_model_ttl (default 300; "
        "-1: never); the default model stays",
    )
    p.add_argument(
        "--max-audio-s",
        type=float,
        default=0.0,
        help="refuse audio longer than this, once decoded (413; default 0: no limit)",
    )
    p.add_argument(
        "--max-request-s",
        type=float,
        default=0.0,
        help="stop a request's run past this many seconds (504; jobs exempt; default 0: none)",
    )
    p.add_argument(
        "--body-timeout-s",
        type=float,
        default=30.0,
        help="drop a request whose body sends nothing this long, with 408 (default 30)",
    )
    p.add_argument(
        "--no-vad",
        dest="vad_filter",
        action="store_false",
        help="do not run Silero VAD by default (a request's vad_filter or "
        "chunking_strategy still asks for it); default: on, as speaches",
    )
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        help="allow browsers from this origin (repeat; * for any); default: none",
    )
    p.add_argument(
        "--data-dir", default="saywho-data", help="jobs database and uploads (./saywho-data)"
    )
    p.add_argument(
        "--job-ttl-hours", type=float, default=24.0, help="finished jobs are kept this long (24)"
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p


def _keys(given: list[str] | None) -> tuple[str, ...]:
    """--api-key (repeated) or SAYWHO_API_KEY (comma-separated); blanks dropped."""
    raw = given or environment.read("SAYWHO_API_KEY", "").split(",")
    return tuple(k.strip() for k in raw if k.strip())


def _folders(given: list[str], parser: argparse.ArgumentParser) -> dict[str, str]:
    """--model-folder NAME=FOLDER (repeated): each an existing folder, each name once."""
    folders: dict[str, str] = {}
    for text in given:
        name, sep, folder = text.partition("=")
        name = name.strip()
        if not sep or not name or not folder:
            parser.error(f"--model-folder takes NAME=FOLDER, not {text!r}")
        if not os.path.isdir(folder):
            parser.error(f"--model-folder {name}: {folder} is not a folder")
        if name in folders:
            parser.error(f"--model-folder names {name!r} twice")
        folders[name] = folder
    return folders


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    folders = _folders(args.model_folder, parser)
    try:
        import uvicorn

        from .app import HTTP_PROTOCOL, create_app
    except ImportError as e:
        print(f'saywho serve: {e.name} is missing: pip install "saywho[server]"', file=sys.stderr)
        return 2

    model = args.model
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    config = ServerConfig(
        model=model,
        model_folders=folders,
        device=args.device,
        compute_type=args.compute_type,
        api_keys=_keys(args.api_key),
        workers=args.workers,
        max_queued=args.max_queued,
        max_jobs=args.max_jobs,
        max_upload_mb=args.max_upload_mb,
        max_models=args.max_models,
        model_ttl_s=args.model_ttl_s,
        body_timeout_s=args.body_timeout_s,
        max_audio_s=args.max_audio_s,
        max_request_s=args.max_request_s,
        vad_filter=args.vad_filter,
        cors_origins=tuple(args.cors_origin),
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
            uvicorn.Config(
                app,
                host=args.host,
                port=args.port,
                log_level=args.log_level,
                # its malformed-request 400 in OpenAI's shape, and a time limit on headers
                http=type("Protocol", (HTTP_PROTOCOL,), {"header_timeout_s": args.body_timeout_s}),
            )
        )
        server.run()
    except _core.SaywhoError as e:
        print(f"saywho serve: {e}", file=sys.stderr)
        return 2
    return 0
