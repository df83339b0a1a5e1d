"""How many 10 s chunks one segmentation call takes (``batch_size=None``).

On the CPU a batch only bounds the peak memory (each chunk holds SincNet's
first layer, 16,000 x 80 floats), so it stays at 16. On a GPU a call is a
host round trip (one copy up, one down: docs/cuda_backend.md), so the batch
is pyannote's default of 32 chunks, fewer where the device's free memory
would not hold them.
"""

from __future__ import annotations

from .._internal.native import _core

CPU_BATCH = 16
DEVICE_BATCH = 32  # pyannote.audio's segmentation batch_size
# A chunk's working set on a device, measured on the emulator (segmentation
# and its GE2E partials, pool peak over a batch of 8 chunks, rounded up):
# SincNet's first layer's copy of the window, its pooled output, the LSTMs'.
CHUNK_BYTES = 16 << 20
# The share of the free memory a batch may take: Whisper's models and their
# caches (and anything else on the card) keep the rest.
FREE_SHARE = 4


def chunk_batch(device: str, free_bytes: int) -> int:
    """The batch for a runtime on ``device`` ("cpu" or "cuda") with
    ``free_bytes`` of device memory free."""
    if device == "cpu":
        return CPU_BATCH
    return max(1, min(DEVICE_BATCH, free_bytes // FREE_SHARE // CHUNK_BYTES))


def batch_for(runtime: _core.Runtime, asked: int | None) -> int:
    """``asked`` when given (checked), else chunk_batch for ``runtime``."""
    if asked is not None:
        if not isinstance(asked, int) or isinstance(asked, bool) or asked < 1:
            raise _core.OptionError(
                f"batch_size must be a whole number of chunks >= 1, not {asked!r}"
            )
        return asked
    return chunk_batch(runtime.device, int(runtime.memory().get("free", 0)))
