"""Model weights read from their published formats into named NumPy arrays.

Readers know formats, mappings know a model family's names and shapes, and
the C core knows only the named arrays (docs/design.md, "Model code knows
shapes, not formats").
"""

from .whisper_weights import WhisperWeights, load_whisper

__all__ = ["WhisperWeights", "load_whisper"]
