"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

Every failure a client can cause or meet becomes an :class:`APIError` with
its HTTP status; saywho's own exceptions map by class (bad audio or options
are the request's fault: 400; an unknown model: 404). Anything else is
logged with its traceback on the server and answered as a plain 500 without
one, so no internals leak to clients.
"""

from __future__ import annotations

from ..._internal.native import _core


class APIError(Exception):
    """An answer other than success: status, message and OpenAI's fields."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict:
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }


def bad_field(param: str, message: str) -> APIError:
    return APIError(400, message, param=param, code="invalid_value")


def unknown_model(name: str, why: str = "") -> APIError:
    detail = f": {why}" if why else ""
    return APIError(
        404,
        f"The model {name!r} does not exist or cannot be loaded{detail}",
        param="model",
        code="model_not_found",
    )


def from_saywho(error: _core.SaywhoError, model: str | None = None) -> APIError:
    """saywho's exceptions: the request's audio or options (400), or the model
    (404, naming ``model`` as the client sent it)."""
    if isinstance(error, _core.AudioError):
        return APIError(400, str(error), param="file", code="invalid_audio")
    if isinstance(error, _core.ModelError):
        return unknown_model(model or "", str(error))
    if isinstance(error, _core.OptionError):
        return APIError(400, str(error), code="invalid_value")
    return APIError(500, str(error), type="server_error", code="saywho_error")


def internal() -> APIError:
    return APIError(
        500, "The server failed on this request; its log has the details", type="server_error"
    )


def shutting_down() -> APIError:
    return APIError(
        503,
        "The server is shutting down; retry on another",
        type="server_error",
        code="shutting_down",
    )
