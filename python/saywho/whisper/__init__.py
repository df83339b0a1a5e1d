"""Whisper decoding in Python/NumPy, step for step as CTranslate2 does it on the CPU.

The network itself (encoder, decoder, KV cache) lives in the C core; this
package only chooses tokens. See docs/whisper_decoding.md.
"""

from __future__ import annotations

from .batched import BatchedInferencePipeline
from .generate import (
    GenerateOptions,
    GenerationResult,
    WhisperSpecialTokens,
    WindowOptions,
    WindowResult,
    compression_ratio,
    generate,
    should_skip_window,
    suppressed_tokens,
    transcribe_window,
)
from .protocol import WhisperDecoderModel, WhisperDecoderState
from .search import SearchResult, beam_search, ct2_topk, greedy_search

__all__ = [
    "BatchedInferencePipeline",
    "GenerateOptions",
    "GenerationResult",
    "SearchResult",
    "WhisperDecoderModel",
    "WhisperDecoderState",
    "WhisperSpecialTokens",
    "WindowOptions",
    "WindowResult",
    "beam_search",
    "compression_ratio",
    "ct2_topk",
    "generate",
    "greedy_search",
    "should_skip_window",
    "suppressed_tokens",
    "transcribe_window",
]
