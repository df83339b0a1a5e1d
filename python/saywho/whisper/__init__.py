"""Whisper transcription: options, the 30 s seek loop, the temperature
fallback and results in Python; the network and the token search (logits
rules, greedy, beam search, sampling) in the C core, one call per batch of
windows (csrc/whisper/whisper_generate.h). See docs/whisper_decoding.md.
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
    generate_windows,
    should_skip_window,
    suppressed_tokens,
    transcribe_window,
)
from .options import TranscribeOptions
from .protocol import WhisperDecoderModel, WhisperDecoderState

__all__ = [
    "BatchedInferencePipeline",
    "GenerateOptions",
    "GenerationResult",
    "TranscribeOptions",
    "WhisperDecoderModel",
    "WhisperDecoderState",
    "WhisperSpecialTokens",
    "WindowOptions",
    "WindowResult",
    "compression_ratio",
    "generate",
    "generate_windows",
    "should_skip_window",
    "suppressed_tokens",
    "transcribe_window",
]
