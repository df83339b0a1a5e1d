"""HTTP the server speaks: uvicorn's h11 protocol, its own 400 in OpenAI's shape.

A request h11 cannot parse (a Content-Length that is not a number, two
that disagree, a broken chunk) never reaches the application: uvicorn
answers it with a plain-text 400. Clients of an OpenAI-compatible server
read ``{"error": {...}}`` from every failure, so this one is written in
that shape too.
"""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

BODY = json.dumps(
    {
        "error": {
            "message": "The HTTP request is malformed (its headers or framing): "
            "check Content-Length and Transfer-Encoding",
            "type": "invalid_request_error",
            "param": None,
            "code": "malformed_request",
        }
    }
).encode()


class OpenAIErrorsH11(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BODY)).encode()),
            (b"connection", b"close"),
        ]
        self.transport.write(
            self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request"))
        )
        self.transport.write(self.conn.send(h11.Data(data=BODY)))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()
