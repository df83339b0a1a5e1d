"""diarize(): open the models, diarize one recording, close them, in one call."""

from __future__ import annotations

import os

from .._internal.native import _core
from ..models.bundled import resolve_embedding, resolve_segmentation
from .diarize import Diarization, Diarizer
from .pretrained import open_pipeline


def diarize(
    audio,
    segmentation: str | os.PathLike[str] | None = None,
    embedding: str | os.PathLike[str] | None = None,
    num_speakers: int | None = None,
    min_speakers: int | None = None,
    max_speakers: int | None = None,
    pipeline: str | os.PathLike[str] | None = None,
    token: str | bool | None = None,
    **options,
) -> Diarization:
    """One call: open the models, diarize ``audio`` (a path or 16 kHz samples), close.

    ``pipeline="pyannote/speaker-diarization-3.1"`` (or ``-community-1``)
    runs pyannote's pipeline of that name, its files fetched from the
    Hugging Face hub with ``token`` (saywho[hub]). Otherwise ``segmentation``
    and ``embedding`` are paths or names ("segmentation-3.0", "campp",
    "ge2e"); without them the models the wheel ships are used
    (segmentation-3.0 and CAM++).
    """
    if pipeline is not None:
        if segmentation is not None or embedding is not None:
            raise _core.OptionError("give pipeline= or segmentation=/embedding=, not both")
        with open_pipeline(pipeline, token=token, **options) as d:
            return d(audio, num_speakers, min_speakers, max_speakers)
    segmentation, embedding = resolve_segmentation(segmentation), resolve_embedding(embedding)
    with Diarizer(segmentation, embedding, **options) as d:
        return d(audio, num_speakers, min_speakers, max_speakers)
