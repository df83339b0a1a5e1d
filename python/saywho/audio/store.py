"""Long recordings decoded onto disk, so memory does not grow with their length.

A file whose decoded samples would pass ``in_memory_seconds`` (10 minutes by
default: 38 MB) is decoded in pieces of 4 MiB into an unnamed temporary file
(``tempfile.TemporaryFile``: O_TMPFILE on Linux, so it has no name to be left
behind, not after close, an exception or a crash) and given back as a
read-only ``np.memmap`` over that file. Every stage reads the samples window
by window (diarization a batch of 10 s chunks at a time, the speech detector
its frames, Whisper its 30 s windows), so the pages it touches are file-backed
page cache the kernel can drop, not the process's anonymous memory; a 10-hour
recording (2.3 GB of samples) costs disk in the temporary folder, not RAM.
The file's space is freed when the last view of the array goes away.

A shorter recording comes back as an ordinary array, as it always did: the
temporary file is then never written.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

from .._internal.native import _core

#: Recordings longer than this many seconds are decoded onto disk.
IN_MEMORY_SECONDS = 600.0


def decode_file(
    path, sample_rate: int, in_memory_seconds: float | None, directory: str | None = None
) -> np.ndarray:
    """Mono float32 samples of ``path`` at ``sample_rate``: an array, or a
    read-only memmap over an unnamed temporary file in ``directory``
    (default: tempfile's, $TMPDIR) when longer than ``in_memory_seconds``
    (None: never)."""
    if in_memory_seconds is None:
        return _core.decode_file(path, sample_rate)
    if isinstance(in_memory_seconds, bool) or not (
        isinstance(in_memory_seconds, (int, float)) and in_memory_seconds >= 0
    ):
        raise _core.OptionError(
            f"in_memory_seconds must be a number of seconds >= 0 or None, not {in_memory_seconds!r}"
        )
    spill_after = max(1, int(in_memory_seconds * sample_rate))
    try:
        store = tempfile.TemporaryFile(prefix="saywho-audio-", dir=directory)
    except OSError as e:
        raise _core.AudioError(
            f"{os.fsdecode(os.fspath(path))}: cannot create a temporary file for its samples "
            f"in {directory or tempfile.gettempdir()}: {e.strerror or e}"
        ) from None
    with store:  # closed (and so gone) whatever happens: the map keeps its own handle
        decoded = _core.decode_file(path, sample_rate, store.fileno(), spill_after)
        if isinstance(decoded, np.ndarray):
            return decoded
        return np.memmap(store, dtype=np.float32, mode="r", shape=(decoded,))


def on_disk(samples) -> bool:
    """Whether ``samples`` (or the array it is a view of) lie in a file."""
    while isinstance(samples, np.ndarray):
        if isinstance(samples, np.memmap):
            return True
        samples = samples.base
    return False
