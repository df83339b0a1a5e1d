"""One request run on a loaded Pipeline: transcription alone, or with speakers.

Transcription alone calls ``Pipeline.transcribe`` (Whisper's segments keep
every field verbose_json has); speakers call ``Pipeline.process``
(diarization and alignment). The request's options are saywho's keywords
already, read and checked by the declarations (fields.OPTION_FIELDS).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from ..native import ModelError
from .errors import APIError
from .fields import AudioRequest
from .models import choose
from .pool import PipelinePool
from .transcript import Transcript


def run(
    request: AudioRequest, path: str, pool: PipelinePool, progress=None, on_segment=None
) -> Transcript:
    """The request's transcript; ``progress`` and ``on_segment`` hear the run
    as it goes (saywho's callbacks: a job's progress, a stream's deltas)."""
    choice = choose(request.model, pool.default_model)
    diarize = request.diarize or choice.diarize
    options = dict(request.options)
    if diarize:
        options["word_timestamps"] = True
    loaded = pool.get(choice.load, request.diarization if diarize else None)
    with loaded.lock, _references(request, Path(path).parent) as known:
        if diarize:
            if known:
                options["known_speakers"] = known
            try:
                result = loaded.pipeline.process(
                    path, diarize=True, progress=progress, on_segment=on_segment, **options
                )
            except ModelError as e:
                if request.diarization is None:
                    raise
                # the named pyannote pipeline: gated, absent, or no token on the server
                raise APIError(
                    400, str(e), param="diarization", code="diarization_unavailable"
                ) from None
            return Transcript.from_result(request.task, result)
        segments, info = loaded.pipeline.transcribe(
            path, progress=progress, on_segment=on_segment, **options
        )
        return Transcript.from_whisper(request.task, segments, info)


@contextlib.contextmanager
def _references(request: AudioRequest, spool: Path):
    """The known speakers' clips as files beside the upload (saywho decodes
    any format FFmpeg reads from a path), removed after the run."""
    paths: dict[str, str] = {}
    try:
        for name, audio in request.known_speakers.items():
            path = spool / f"ref-{uuid.uuid4().hex}"
            path.write_bytes(audio)
            paths[name] = str(path)
        yield paths
    finally:
        for path in paths.values():
            with contextlib.suppress(OSError):
                os.unlink(path)
