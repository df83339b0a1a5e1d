"""Whisper's log-mel of a long recording, computed a window at a time.

``WhisperModel.log_mel`` computes the spectrogram of the whole recording at
once: half the samples' size again in memory (1.2 GB for 10 hours). For
samples decoded onto disk (saywho.audio.store) the seek loop reads
``features[:, seek : seek + 3000]`` from this object instead, which computes
just those frames from the samples around them.

Two things make a piece's frames differ from the whole recording's, and both
are undone here. The STFT is centred (frame k is centred on sample 160 k, and
the signal is reflected at its ends), so a piece is cut with CONTEXT frames
of samples on each side and those frames, which see the reflection, are
dropped; at the recording's own start and end the reflection and the hop of
zeros (``padding=160``) are the whole recording's. And Whisper floors every
value at the recording's loudest minus 8 (log10 units; 2 after its (x + 4) /
4 scaling): a first pass takes the loudest over all pieces, and each window's
values are floored again at that. A piece's own floor is never above the
recording's (its loudest is never louder), so flooring again gives the
recording's values; they may differ from the whole-array computation's in the
last bit of float32, where the floor is rounded.
"""

from __future__ import annotations

import numpy as np

from .._internal.native import _core

HOP = 160
# frames of samples on each side of a piece: 2 * 160 >= n_fft / 2 = 200, so
# the kept frames never see the piece's reflected edges
CONTEXT = 2
# frames per piece in the pass that finds the loudest value (5 minutes)
PIECE_FRAMES = 30000
FLOOR = 2.0  # Whisper's 8 log10 units below the loudest, after / 4


class WindowedLogMel:
    """``features`` for the seek loop: ``shape`` and ``[:, a:b]`` as the
    whole recording's log-mel (with its one extra frame) would give."""

    def __init__(self, samples: np.ndarray, n_mels: int, threads: int):
        self.samples = samples
        self.n_mels = n_mels
        self.threads = threads
        self.frames = (samples.size + HOP) // HOP  # log_mel(padding=HOP)'s count
        self.shape = (n_mels, self.frames)
        loudest = -np.inf
        for start in range(0, self.frames, PIECE_FRAMES):
            piece = self._frames(start, min(start + PIECE_FRAMES, self.frames))
            loudest = max(loudest, float(piece.max()))
        self.floor = np.float32(loudest - FLOOR)

    def _frames(self, a: int, b: int) -> np.ndarray:
        """Frames [a, b) with the floor of the samples they were cut from."""
        first = max(a - CONTEXT, 0)
        last = b + CONTEXT
        at_end = last >= self.frames
        piece = self.samples[first * HOP : self.samples.size if at_end else last * HOP]
        mel = _core.log_mel_spectrogram(
            np.ascontiguousarray(piece, dtype=np.float32),
            n_mels=self.n_mels,
            padding=HOP if at_end else 0,
            threads=self.threads,
        )
        return mel[:, a - first : b - first]

    def __getitem__(self, index) -> np.ndarray:
        rows, columns = index
        if rows != slice(None) or not isinstance(columns, slice) or columns.step not in (None, 1):
            raise _core.OptionError("WindowedLogMel reads [:, a:b] only")
        a, b, _ = columns.indices(self.frames)
        if b <= a:
            return np.zeros((self.n_mels, 0), dtype=np.float32)
        return np.maximum(self._frames(a, b), self.floor)
