"""The request body, parsed as it arrives: the audio straight to the spool.

The multipart body is read in the pieces the server receives and fed to
python-multipart's parser; the ``file`` part's bytes go to a file under a
generated name (never the client's, which is used only in messages), counted
as they come, so an upload over the limit ends with a 413 as soon as it
passes it, Content-Length or not, and no copy of the audio is held in memory
or in a second temporary file. The other fields are kept as text, and
bounded whatever the framing (chunked bodies declare no length): all of
them together at most ``field_limit`` bytes, at most ``MAX_PARTS`` parts,
each part's headers at most ``MAX_HEADER_BYTES``. A body that sends nothing
for ``idle_timeout`` seconds is answered 408 and dropped, so a stalled
client holds neither a file nor a connection for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from .errors import APIError, bad_field

MAX_PARTS = 256  # OpenAI's longest form (known speakers, granularities) has a few dozen
MAX_HEADER_BYTES = 8 << 10  # one part's headers


def too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"The file is larger than this server's limit of {limit // (1 << 20)} MB",
        param="file",
        code="file_too_large",
    )


class Form(dict):
    """Field name -> its values, as the form gave them (``getlist`` like Starlette's)."""

    def getlist(self, name: str) -> list[str]:
        return self.get(name, [])


class _Body:
    """python-multipart's callbacks: headers per part, the file to disk."""

    def __init__(self, path: Path, limit: int, field_limit: int):
        self.path = path
        self.limit = limit
        self.field_limit = field_limit
        self.form = Form()
        self.filename: str | None = None
        self.size = 0
        self.out = None
        self._header = [b"", b""]
        self._disposition = b""
        self._name: str | None = None
        self._is_file = False
        self._data = bytearray()
        self.parts = 0
        self.field_bytes = 0  # every text field so far, together
        self._header_bytes = 0

    def on_part_begin(self) -> None:
        self.parts += 1
        if self.parts > MAX_PARTS:
            raise APIError(400, f"The form has more than {MAX_PARTS} parts", code="too_many_parts")
        self._disposition, self._name, self._is_file = b"", None, False
        self._header_bytes = 0
        self._data.clear()

    def _count_header(self, n: int) -> None:
        self._header_bytes += n
        if self._header_bytes > MAX_HEADER_BYTES:
            raise APIError(400, f"A part's headers are over {MAX_HEADER_BYTES} bytes")

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._header[0] += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header(end - start)
        self._header[1] += data[start:end]

    def on_header_end(self) -> None:
        if self._header[0].lower() == b"content-disposition":
            self._disposition = self._header[1]
        self._header = [b"", b""]

    def on_headers_finished(self) -> None:
        _kind, options = parse_options_header(self._disposition)
        if b"name" not in options:
            raise APIError(400, "a multipart part has no name")
        self._name = options[b"name"].decode("utf-8", "replace")
        # the part named file is the audio, with or without a filename (an
        # empty one is dropped by the header parser): the name is only for messages
        self._is_file = b"filename" in options or self._name == "file"
        if not self._is_file:
            return
        if self._name != "file":
            raise bad_field(self._name, f"{self._name} must be a form field, not a file")
        if self.out is not None:
            raise bad_field("file", "give one file")
        self.filename = options.get(b"filename", b"").decode("utf-8", "replace") or "file"
        self.out = open(self.path, "xb")

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        if self._is_file:
            self.size += end - start
            if self.size > self.limit:
                raise too_large(self.limit)
            self.out.write(data[start:end])
            return
        self.field_bytes += end - start
        if self.field_bytes > self.field_limit:
            raise APIError(
                413,
                f"The form's fields are over {self.field_limit >> 20} MB together "
                f"(at {self._name})",
                param=self._name,
                code="fields_too_large",
            )
        self._data += data[start:end]

    def on_part_end(self) -> None:
        if not self._is_file:
            value = self._data.decode("utf-8", "replace")
            self.form.setdefault(self._name, []).append(value)


def body_timeout(seconds: float) -> APIError:
    return APIError(
        408,
        f"The request body stalled: nothing arrived for {seconds:g} s",
        code="body_timeout",
        headers={"Connection": "close"},
    )


async def _pieces(request, idle_timeout: float):
    """The body as it arrives; a gap longer than ``idle_timeout`` is a 408."""
    stream = request.stream().__aiter__()
    while True:
        try:
            piece = await asyncio.wait_for(stream.__anext__(), idle_timeout)
        except StopAsyncIteration:
            return
        except asyncio.TimeoutError:
            raise body_timeout(idle_timeout) from None
        yield piece


async def read_form(
    request, path: Path, limit: int, field_limit: int, idle_timeout: float = 30.0
) -> tuple[Form, str, int]:
    """The form's fields, the client's file name and the file's size; the
    file is at ``path``, fsynced (a job's upload must survive a crash)."""
    kind, params = parse_options_header(request.headers.get("content-type", ""))
    if kind != b"multipart/form-data" or b"boundary" not in params:
        raise bad_field("file", "The body must be multipart/form-data, with the audio as file")
    body = _Body(path, limit, field_limit)
    parser = MultipartParser(
        params[b"boundary"],
        {
            name: getattr(body, name)
            for name in (
                "on_part_begin",
                "on_header_field",
                "on_header_value",
                "on_header_end",
                "on_headers_finished",
                "on_part_data",
                "on_part_end",
            )
        },
    )
    try:
        async for piece in _pieces(request, idle_timeout):
            parser.write(piece)
        parser.finalize()
        if body.out is None:
            raise bad_field("file", "file is required: the audio as a multipart file")
        body.out.flush()
        os.fsync(body.out.fileno())
        body.out.close()
    except BaseException as e:
        if body.out is not None:
            body.out.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
        if isinstance(e, MultipartParseError):
            raise APIError(400, f"The multipart body is malformed: {e}") from None
        raise
    if body.size == 0:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise APIError(400, "The file is empty", param="file", code="invalid_audio")
    return body.form, body.filename, body.size
