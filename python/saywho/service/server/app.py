"""The FastAPI application: OpenAI's /v1/audio routes, models, health and jobs."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import time
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..._internal.native import _core
from .config import ServerConfig
from .errors import APIError, bad_field, internal, shutting_down
from .fields import RESPONSE_FORMATS, AudioRequest, parse_form
from .formats import render
from .models import choose, listed, public_name
from .prometheus import rss_bytes
from .protocol import OpenAIErrorsH11
from .state import ServerState, as_api_error
from .streaming import ClientGone, events
from .transcript import Transcript
from .uploads import read_form, too_large

log = logging.getLogger("saywho.server")
# uvicorn's HTTP protocol for this app: h11, its malformed-request 400 in OpenAI's shape
HTTP_PROTOCOL = OpenAIErrorsH11
# a known speaker's 10 s data URL is far over Starlette's 1 MB default for a field
MAX_FIELD_BYTES = 16 << 20
OPEN_PATHS = ("/health", "/metrics", "/docs", "/openapi.json", "/redoc")
# a client that left gets no answer; the access log shows nginx's code for it
CLIENT_CLOSED = 499


def _error_response(error: APIError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def create_app(config: ServerConfig) -> FastAPI:
    state = ServerState(config)
    try:  # a bad --model or --device fails here, before the port opens
        state.start()
    except BaseException:
        state.close()
        raise

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        state.close()

    app = FastAPI(
        title="saywho",
        version=_core.__version__,
        summary="OpenAI's audio API, with speakers",
        lifespan=lifespan,
    )
    app.state.saywho = state

    @app.exception_handler(APIError)
    async def api_error(_request, error: APIError):
        return _error_response(error)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request, error: RequestValidationError):
        first = error.errors()[0] if error.errors() else {}
        where = first.get("loc", ())
        param = str(where[-1]) if where else None
        return _error_response(APIError(400, first.get("msg", "invalid request"), param=param))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request, error: StarletteHTTPException):
        kind = "not_found" if error.status_code == 404 else None
        return _error_response(APIError(error.status_code, str(error.detail), code=kind))

    @app.exception_handler(Exception)
    async def unexpected(_request, error: Exception):
        log.error("unexpected error", exc_info=error)
        return _error_response(internal())

    keys = {hashlib.sha256(k.encode()).hexdigest(): k for k in config.api_keys}

    def _owner(request: Request) -> str | None:
        """The digest of the request's key (the gate checked it), or None when open."""
        return getattr(request.state, "owner", None)

    @app.middleware("http")
    async def gate(request: Request, call_next):
        """Shutting down, the key, and an upload's declared size, before any body is read."""
        response = await _gated(request, call_next)
        state.metrics.request(_route(request), response.status_code)
        return response

    def _route(request: Request) -> str:
        """The route's template (/v1/jobs/{job_id}), so ids do not each make a series."""
        route = request.scope.get("route")
        return getattr(route, "path", None) or "unmatched"

    async def _gated(request: Request, call_next):
        if state.closing:
            return _error_response(shutting_down())
        path = request.url.path
        if keys and not path.startswith(OPEN_PATHS):
            given = request.headers.get("authorization", "")
            scheme, _, key = given.partition(" ")
            digest = hashlib.sha256(key.strip().encode()).hexdigest()
            # compare_digest against the key of the same digest: no early-exit timing
            known = keys.get(digest, "")
            if scheme.lower() != "bearer" or not (
                known and hmac.compare_digest(key.strip().encode(), known.encode())
            ):
                return _error_response(
                    APIError(
                        401,
                        "Incorrect API key provided"
                        if given
                        else "Missing API key: send Authorization: Bearer KEY",
                        code="invalid_api_key",
                    )
                )
            request.state.owner = digest
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > config.max_upload_bytes + MAX_FIELD_BYTES:
            return _error_response(too_large(config.max_upload_bytes))
        return await call_next(request)

    if config.cors_origins:  # added last: outermost, so a preflight never meets the key
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(config.cors_origins),
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "OpenAI-Organization"],
            expose_headers=["Retry-After"],
            max_age=600,
        )

    async def _read(request: Request, task: str | None, kind: str):
        """The body parsed, the audio spooled, the model checked: (request, path, name)."""
        path = state.jobs.new_upload_path(kind)
        form, filename, _size = await read_form(
            request, path, config.max_upload_bytes, MAX_FIELD_BYTES, config.body_timeout_s
        )
        try:
            if task is None:  # a job says which with its own field
                task = (form.getlist("task") or ["transcribe"])[0]
                if task not in ("transcribe", "translate"):
                    raise bad_field("task", f"task is transcribe or translate, not {task!r}")
            audio = parse_form(form, task)
            # an unknown model is a 404 before any work
            choose(audio.model, config.model, config.model_folders)
            if "vad_filter" not in audio.options:  # the service's default (--no-vad: off)
                audio.options["vad_filter"] = config.vad_filter
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        return audio, path, filename

    async def _sync(request: Request, task: str) -> Response:
        state.check_room()
        audio, path, filename = await _read(request, task, "req")
        if audio.stream:
            return await _stream(audio, str(path), filename)
        try:
            transcript = await state.run_now(audio, str(path), filename, request.receive)
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
        return _rendered(transcript, audio)

    async def _stream(audio, path: str, filename: str) -> StreamingResponse:
        live, first = await state.run_streaming(audio, path, filename)
        body = events(
            live, audio, first, lambda e: state.stream_error(e, filename, path, audio.model)
        )
        # no-cache and no proxy buffering: each event must reach the client as it is sent
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)

    def _rendered(transcript: Transcript, audio) -> Response:
        body, media_type = render(transcript, audio)
        if isinstance(body, str):
            return PlainTextResponse(body, media_type=media_type)
        return JSONResponse(body)

    @app.post("/v1/audio/transcriptions", summary="Transcribe audio (OpenAI's API, with speakers)")
    async def transcriptions(request: Request):
        return await _sync(request, "transcribe")

    @app.post("/v1/audio/translations", summary="Translate audio into English text")
    async def translations(request: Request):
        return await _sync(request, "translate")

    @app.get("/v1/models")
    async def models():
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "saywho"}
                for name in listed(config.model, config.model_folders)
            ],
        }

    @app.get("/v1/models/{name:path}")
    async def model(name: str):
        choose(name, config.model, config.model_folders)
        return {"id": name, "object": "model", "created": int(time.time()), "owned_by": "saywho"}

    def _public_name(model: str) -> str:
        """What clients call a model: never the server's folder path."""
        return public_name(model, config.model, config.model_folders)

    @app.get("/health")
    async def health():
        loaded = state.pool.describe(_public_name)  # counts no request
        default = state.pool.get(config.model, None).pipeline
        return {
            "status": "shutting_down" if state.closing else "ok",
            "version": _core.__version__,
            "device": default.device,
            "device_name": default.device_name,
            "cpu_because": default.fallback_reason,
            "queue": {
                "queued": state.queue.queued,
                "running": state.queue.running,
                "max_queued": config.max_queued,
                "jobs_queued": state.queue.jobs_queued,
                "max_jobs": config.max_jobs,
                "workers": config.workers,
            },
            "models": loaded,
            "max_models": config.max_models,
            "model_ttl_s": config.model_ttl_s,
        }

    @app.get("/metrics", summary="Prometheus' text format")
    async def metrics():
        loaded = state.pool.describe(_public_name)
        gauges = {
            "queue_requests": ("requests waiting for a worker", [({}, state.queue.queued)]),
            "queue_jobs": ("jobs waiting for a worker", [({}, state.queue.jobs_queued)]),
            "running": ("runs under way", [({}, state.queue.running)]),
            "models_loaded": ("Pipelines loaded", [({}, len(loaded))]),
            "resident_memory_bytes": ("the process's resident memory", [({}, rss_bytes())]),
        }
        return PlainTextResponse(
            state.metrics.text(gauges), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    # -- model lifetime: speaches' /api/ps ---------------------------------------------
    def _ps(entry: dict) -> dict:
        return {k: entry[k] for k in ("model", "diarization", "requests", "busy", "idle_s")}

    @app.get("/api/ps", summary="The loaded models")
    async def loaded_models():
        return {"models": [_ps(m) for m in state.pool.describe(_public_name)]}

    @app.post("/api/ps/{name:path}", status_code=201, summary="Load a model now")
    async def load_model(name: str):
        choice = choose(name, config.model, config.model_folders)
        try:
            await asyncio.to_thread(state.pool.get, choice.load, None)
        except _core.SaywhoError as e:
            raise as_api_error(e, model=name) from None
        return {"model": name, "loaded": True}

    @app.delete("/api/ps/{name:path}", summary="Unload a model (when idle)")
    async def unload_model(name: str):
        choice = choose(name, config.model, config.model_folders)
        if choice.load == config.model:
            raise APIError(
                409, "The server's default model stays loaded", param="model", code="default_model"
            )
        if not await asyncio.to_thread(state.pool.unload, choice.load):
            raise APIError(
                404, f"The model {name!r} is not loaded", param="model", code="model_not_loaded"
            )
        return {"model": name, "loaded": False}

    # -- jobs: long files, on disk ---------------------------------------------------
    def _job(row) -> dict:
        out = {
            "id": row["id"],
            "object": "audio.job",
            "status": row["state"],
            "created_at": int(row["created_at"]),
            "attempts": row["attempts"],
            "progress": {
                "stage": row["stage"],
                "done": row["done"],
                "total": row["total"],
            },
        }
        if row["finished_at"]:
            out["finished_at"] = int(row["finished_at"])
        if row["error"]:
            out["error"] = json.loads(row["error"])["body"]["error"]
        return out

    def _row(request: Request, job_id: str):
        row = state.jobs.owned(job_id, _owner(request))  # another key's job is as absent
        if row is None:
            raise APIError(404, f"No job {job_id!r}", param="job_id", code="job_not_found")
        return row

    @app.post("/v1/jobs", status_code=202, summary="Queue a long file; poll its progress")
    async def create_job(request: Request):
        state.check_job_room()
        audio, path, _name = await _read(request, None, "job")
        if audio.stream:
            os.unlink(path)
            raise bad_field("stream", "a job is polled, not streamed: leave stream out")
        job_id = state.jobs.create(audio.to_record(), path, _owner(request))
        state.submit_job(job_id, os.path.getsize(path))
        state.jobs.expire()
        return JSONResponse(_job(_row(request, job_id)), status_code=202)

    @app.get("/v1/jobs")
    async def list_jobs(request: Request):
        return {"object": "list", "data": [_job(r) for r in state.jobs.list(_owner(request))]}

    @app.get("/v1/jobs/{job_id}")
    async def get_job(request: Request, job_id: str):
        return _job(_row(request, job_id))

    @app.get("/v1/jobs/{job_id}/result")
    async def job_result(request: Request, job_id: str, response_format: str = "json"):
        row = _row(request, job_id)
        if row["state"] == "failed":
            error = json.loads(row["error"])
            return JSONResponse(error["body"], status_code=error["status"])
        if row["state"] != "succeeded":
            raise APIError(
                409, f"Job {job_id} is {row['state']}, not finished", code="job_not_finished"
            )
        request = json.loads(row["request"])
        if response_format not in RESPONSE_FORMATS:
            raise bad_field("response_format", f"unknown response_format {response_format!r}")
        audio = AudioRequest.from_record(request)
        audio.response_format = response_format
        return _rendered(Transcript.from_record(json.loads(row["result"])), audio)

    @app.delete("/v1/jobs/{job_id}")
    async def delete_job(request: Request, job_id: str):
        row = _row(request, job_id)
        if row["state"] in ("queued", "running"):
            state.cancel_job(job_id)
            return _job(_row(request, job_id))
        state.jobs.delete(job_id)
        return {"id": job_id, "object": "audio.job", "deleted": True}

    return app
