"""The uploaded file, moved to the spool under a generated name.

Starlette's form parser has already spilled a large upload to a temporary
file; it is copied in 1 MiB pieces (one piece in memory at a time), counting
bytes, so an upload over the limit ends with a 413 even when the client sent
no Content-Length. The client's file name is only ever used in messages.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .errors import APIError

CHUNK = 1 << 20


def too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"The file is larger than this server's limit of {limit // (1 << 20)} MB",
        param="file",
        code="file_too_large",
    )


async def spool(upload, path: Path, limit: int) -> int:
    """Copies the UploadFile to ``path``; returns its size in bytes."""
    size = 0
    try:
        with open(path, "xb") as out:
            while True:
                piece = await upload.read(CHUNK)
                if not piece:
                    break
                size += len(piece)
                if size > limit:
                    raise too_large(limit)
                out.write(piece)
            out.flush()
            os.fsync(out.fileno())  # a job's upload must survive a crash
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        await upload.close()
    if size == 0:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise APIError(400, "The file is empty", param="file", code="invalid_audio")
    return size
