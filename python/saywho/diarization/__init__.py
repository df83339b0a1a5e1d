"""Speaker diarization the way pyannote does it: segmentation, embeddings,
clustering and turns, on saywho's own C core."""

from .segmentation import (
    FrameTiming,
    SegmentationModel,
    frame_timing,
    load_segmentation,
    sliding_windows,
)

__all__ = [
    "FrameTiming",
    "SegmentationModel",
    "frame_timing",
    "load_segmentation",
    "sliding_windows",
]
