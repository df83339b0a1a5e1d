"""Audio input: a file of any format FFmpeg reads, or a NumPy array, becomes
mono float32 samples at 16 kHz. See docs/audio.md."""

import os

import numpy as np

from .._internal.native import _core
from .store import IN_MEMORY_SECONDS, decode_file

__all__ = ["SAMPLE_RATE", "load_audio"]

#: The rate every model in saywho works at, in Hz.
SAMPLE_RATE = 16000

# A 2-D array with at most this many rows and more columns than rows is taken
# as (channels, frames) and transposed.
_MAX_CHANNELS_FIRST = 8


def load_audio(source, sample_rate=None, *, in_memory_seconds=IN_MEMORY_SECONDS, temp_dir=None):
    """Returns ``source`` as a 1-D float32 array of mono samples at 16 kHz.

    ``source`` is a path (``str``, ``bytes`` or ``os.PathLike``) to any audio
    or video file FFmpeg reads, or an array of samples. For an array,
    ``sample_rate`` (its rate in Hz) is required; it may be 1-D ``(frames,)``
    or 2-D ``(frames, channels)``, and a 2-D array shaped ``(channels,
    frames)`` with at most 8 channels and more frames than channels is
    accepted as well. Integer samples are scaled so that full scale is 1.0
    (int16 / 32768; unsigned types are centred first). Channels are averaged. Raises ``saywho.AudioError`` for
    a missing, empty, unreadable or corrupt file (the message names the file)
    and for an empty array or non-finite samples, and ``saywho.OptionError``
    for a bad ``sample_rate``.

    A file longer than ``in_memory_seconds`` (default 600; None: never) is
    decoded in pieces onto disk and returned as a read-only ``np.memmap``
    over an unnamed temporary file in ``temp_dir`` (default $TMPDIR), so a
    10-hour recording does not take 2.3 GB of memory (saywho.audio.store).
    """
    if isinstance(source, (str, bytes, os.PathLike)):
        if sample_rate is not None:
            raise _core.OptionError(
                "sample_rate is only for arrays; a file's rate is read from the file"
            )
        return decode_file(source, SAMPLE_RATE, in_memory_seconds, temp_dir)

    if sample_rate is None:
        raise _core.OptionError("sample_rate (in Hz) is required when audio is an array")
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)):
        raise _core.OptionError(f"sample_rate must be an integer number of Hz, got {sample_rate!r}")
    try:
        array = np.asarray(source)
    except Exception as exc:
        raise _core.AudioError(f"audio array: cannot be read as numbers: {exc}") from None
    if array.dtype.kind not in "iuf":
        raise _core.AudioError(
            f"audio array: samples must be real numbers, got dtype {array.dtype}"
        )
    if array.ndim not in (1, 2):
        raise _core.AudioError(
            f"audio array: must be 1-D (frames,) or 2-D (frames, channels), got shape {array.shape}"
        )
    if array.size == 0:
        raise _core.AudioError(f"audio array: empty (shape {array.shape})")
    if array.ndim == 2 and array.shape[0] <= _MAX_CHANNELS_FIRST < array.shape[1]:
        array = array.T
    if array.dtype.kind in "iu":
        # Integer PCM (as scipy.io.wavfile reads it): full scale becomes 1.0.
        bits = 8 * array.dtype.itemsize
        offset = 2.0 ** (bits - 1) if array.dtype.kind == "u" else 0.0
        array = (array.astype(np.float64) - offset) / 2.0 ** (bits - 1)
    return _core.resample(array, int(sample_rate), SAMPLE_RATE)
