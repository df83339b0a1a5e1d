"""Speaker diarization the way pyannote does it: segmentation, embeddings,
clustering and turns, on saywho's own C core."""

from .clustering import cluster_embeddings
from .diarize import Diarization, Diarizer
from .embedding_ge2e import GE2EEncoder
from .one_call import diarize
from .segmentation import (
    FrameTiming,
    SegmentationModel,
    frame_timing,
    load_segmentation,
    sliding_windows,
)

__all__ = [
    "Diarization",
    "Diarizer",
    "GE2EEncoder",
    "cluster_embeddings",
    "diarize",
    "FrameTiming",
    "SegmentationModel",
    "frame_timing",
    "load_segmentation",
    "sliding_windows",
]
