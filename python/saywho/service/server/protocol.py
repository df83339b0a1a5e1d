"""HTTP the server speaks: uvicorn's h11 protocol, its own 400 in OpenAI's shape.

A request h11 cannot parse (a Content-Length that is not a number, two
that disagree, a broken chunk) never reaches the application: uvicorn
answers it with a plain-text 400. Clients of an OpenAI-compatible server
read ``{"error": {...}}`` from every failure, so this one is written in
that shape too.

A connection whose first request's headers have not all come in
``header_timeout_s`` is closed (the body's own timeout is the app's,
uploads.read_form): a client that opens connections and trickles headers
holds none for long. Later requests on a kept-alive connection are timed
by uvicorn's keep-alive timeout.
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
    header_timeout_s = 30.0  # saywho serve sets --body-timeout-s on a subclass

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._headers_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _headers_late(self) -> None:
        if self.cycle is None and not self.transport.is_closing():  # no request began
            self.logger.info("closing a connection whose headers did not arrive in time")
            self.transport.close()

    def connection_lost(self, exc) -> None:
        self._headers_timer.cancel()
        super().connection_lost(exc)

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
