"""One request run on a loaded Pipeline: transcription alone, or with speakers.

Transcription alone calls ``Pipeline.transcribe`` (Whisper's segments keep
every field verbose_json has); speakers call ``Pipeline.process``
(diarization and alignment). The request's options are saywho's keywords
already, read and checked by the declarations (fields.OPTION_FIELDS); what
only the loaded model can tell (an English-only model's language, a known
speaker's clip) is checked here, before the run, as a 400 naming the field.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from ..._internal.native import AudioError, ModelError
from ...api.known_speakers import load_clip
from ...audio.decode import load_audio
from .errors import APIError, bad_field
from .fields import AudioRequest
from .models import choose
from .pool import PipelinePool, diarization_unavailable
from .transcript import Transcript


def run(
    request: AudioRequest, path: str, pool: PipelinePool, progress=None, on_segment=None
) -> Transcript:
    """The request's transcript; ``progress`` and ``on_segment`` hear the run
    as it goes (saywho's callbacks: a job's progress, a stream's deltas)."""
    choice = choose(request.model, pool.default_model, pool.model_folders)
    diarize = request.diarize or choice.diarize
    options = dict(request.options)
    if diarize:
        options["word_timestamps"] = True
    diarization = request.diarization if diarize else None
    with pool.use(choice.load, diarization) as loaded:
        check_language(request, loaded.pipeline.languages)
        if diarize:
            known = _references(request, Path(path).parent)
            if known:
                options["known_speakers"] = known
            try:
                result = loaded.pipeline.process(
                    path, diarize=True, progress=progress, on_segment=on_segment, **options
                )
            except ModelError as e:
                if diarization is None:
                    raise
                failed = e
            else:
                return Transcript.from_result(request.task, result)
        else:
            segments, info = loaded.pipeline.transcribe(
                path, progress=progress, on_segment=on_segment, **options
            )
            return Transcript.from_whisper(request.task, segments, info)
    # the named pyannote pipeline: gated, absent, or no token on the server;
    # its Pipeline is not kept (it would hold a Whisper model for nothing)
    pool.discard(choice.load, diarization)
    raise diarization_unavailable(diarization, str(failed))


def check_language(request: AudioRequest, languages: tuple[str, ...]) -> None:
    """400 for what the model cannot do: translate, or decode this language."""
    english_only = languages == ("en",)
    if request.task == "translate" and english_only:
        raise APIError(
            400,
            f"The model {request.model!r} is English-only (.en): it cannot translate; "
            "use a multilingual model",
            param="model",
            code="model_cannot_translate",
        )
    language = request.options.get("language")
    if language is not None and language not in languages:
        if english_only:
            raise bad_field(
                "language",
                f"The model {request.model!r} is English-only (.en): language must be en "
                f"or left out, not {language!r}",
            )
        raise bad_field("language", f"language {language!r} is not one Whisper knows")


def _references(request: AudioRequest, spool: Path) -> dict:
    """The known speakers' clips, decoded and checked (saywho decodes any
    format FFmpeg reads from a path, so each goes through a file beside the
    upload, removed at once). A clip that is not audio, or too short, is a
    400 that names the speaker, never the server's path."""
    known = {}
    for name, audio in request.known_speakers.items():
        path = spool / f"ref-{uuid.uuid4().hex}"
        try:
            path.write_bytes(audio)
            known[name] = load_clip(name, load_audio(str(path)))
        except AudioError as e:
            message = str(e).replace(str(path), f"the reference for {name!r}")
            raise APIError(
                400, message, param="known_speaker_references", code="invalid_audio"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return known
