"""What generation needs from a Whisper network.

``saywho._core.WhisperModel`` satisfies these protocols, and with it the
whole search runs in the core. Any other object that does is driven by the
same C search through callbacks, one per step (``_core.whisper_generate``):
the tests use a NumPy fake this way. ``encode`` is used by
:func:`saywho.whisper.generate.transcribe_window`.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class WhisperDecoderState(Protocol):
    """A KV cache for a fixed number of token sequences over one audio window."""

    def decode(self, tokens: np.ndarray) -> np.ndarray:
        """Append ``tokens`` (int32 ``[n_seq, n_new]``) to every sequence.

        Returns float32 ``[n_seq, n_vocab]``: the logits after the last
        appended token of each sequence.
        """
        ...

    def reorder(self, indices: np.ndarray) -> None:
        """Sequence ``i`` continues the cache of old sequence ``indices[i]``.

        ``indices`` is int32 ``[n_seq]``; the number of sequences never changes.
        """
        ...


class WhisperDecoderModel(Protocol):
    """The network: an encoder for 30 s of log-mel, and decoder states."""

    def encode(self, mel: np.ndarray) -> Any:
        """float32 ``[n_mels, 3000]`` -> an opaque encoder output."""
        ...

    def new_state(self, encoder_output: Any, n_sequences: int) -> WhisperDecoderState:
        """An empty cache of ``n_sequences`` sequences reading ``encoder_output``."""
        ...
