"""A Diarizer set up as one of pyannote's pipelines (models/pyannote_hub.py finds the files)."""

from __future__ import annotations

import os

from .._internal.native import _core
from ..models.pyannote_hub import PipelineFiles, resolve_pipeline
from .diarize import Diarizer
from .vbx import PLDA, VBxClustering


def open_pipeline(
    name: str | os.PathLike | PipelineFiles,
    runtime: _core.Runtime | None = None,
    *,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    local_files_only: bool | None = None,
    revision: str | None = None,
    batch_size: int | None = None,
    embedding_step: float | None = None,
) -> Diarizer:
    """``"pyannote/speaker-diarization-3.1"`` or ``"...-community-1"`` (or a
    folder laid out like their repos) as a Diarizer on ``runtime``: its
    segmentation and embedding checkpoints, its chunk step, and its
    clustering with the config's thresholds (AHC for 3.1, VBx on the PLDA
    for community-1). ``name`` may also be what resolve_pipeline found.
    ``embedding_step``: see Diarizer (None: every chunk, as pyannote)."""
    if isinstance(name, PipelineFiles):
        files = name
    else:
        files = resolve_pipeline(
            name,
            token=token,
            cache_dir=cache_dir,
            local_files_only=local_files_only,
            revision=revision,
        )
    # pyannote's own floors: none on turns (its pipeline passes 0), its
    # config's min_duration_off on gaps (0 in both published pipelines)
    floors = {"min_duration_on": 0.0, "min_duration_off": float(files.min_duration_off)}
    if files.clustering == "VBxClustering":
        clustering = VBxClustering(
            PLDA.load(files.plda),
            threshold=files.params["threshold"],
            fa=files.params["Fa"],
            fb=files.params["Fb"],
        )
        return Diarizer(
            files.segmentation,
            files.embedding,
            runtime,
            step=files.step,
            batch_size=batch_size,
            clustering=clustering,
            embedding_step=embedding_step,
            **floors,
        )
    return Diarizer(
        files.segmentation,
        files.embedding,
        runtime,
        step=files.step,
        threshold=files.params["threshold"],
        min_cluster_size=files.params["min_cluster_size"],
        batch_size=batch_size,
        embedding_step=embedding_step,
        # pyannote's AgglomerativeClustering default, which 3.1 keeps
        constrained_assignment=False,
        **floors,
    )
