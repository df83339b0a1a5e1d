"""Recording in, speaker-attributed transcript out: the stages of Pipeline.process.

decode -> (known speakers' voices) -> diarization -> transcription (with
word timestamps; where the diarization heard nobody, Whisper is not run) ->
alignment. The options arrive built and checked (saywho.api.process_options),
the speaker counts among them, before any audio is decoded.
It drives the Pipeline through its public methods only (transcribe, diarize,
checkpoint), each of which times its stage and ends it with a memory
checkpoint (docs/design.md's stage lines); ``progress(stage, done, total)`` hears
from every stage. The result's ``performance`` is saywho._internal.performance's shape:
decode, diarization, transcription and alignment, the first two with their
own parts.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

import numpy as np

from .._internal.native import _core
from .._internal.performance import Performance
from ..audio.decode import SAMPLE_RATE
from ..audio.vad import vad_options as checked_vad_options
from ..whisper.options import TranscribeOptions
from .known_speakers import check_known, known_voices, load_clip, name_known_speakers
from .process_options import ProcessOptions
from .result import Result
from .silence import drop_silent
from .speaker_words import SpeakerSegment, SpeakerWord, align_segments
from .stage_progress import progress_bar

Progress = Callable[[str, float, float], None]


def _plain_segments(segments) -> list[SpeakerSegment]:
    """Transcribed segments without speakers, in the result's shape."""
    out = []
    for s in segments:
        words = [
            SpeakerWord(float(w.start), float(w.end), w.word, float(w.probability))
            for w in (getattr(s, "words", None) or ())
        ]
        language = getattr(s, "language", None)
        out.append(SpeakerSegment(float(s.start), float(s.end), s.text, None, words, language))
    return out


def process(
    pipeline,
    audio,
    settings: ProcessOptions,
    whisper_options: TranscribeOptions,
    progress: Progress | bool | None = None,
    on_segment: Callable | None = None,
) -> Result:
    """The stages of :meth:`saywho.Pipeline.process` over ``audio`` (a path
    or samples), with its options already built and checked
    (ProcessOptions.split)."""
    known = check_known(settings.known_speakers)
    if known and not settings.diarize:
        raise _core.OptionError("known_speakers needs diarization (diarize=True)")
    if settings.transcribe and pipeline.model_path is None:
        raise _core.OptionError(
            "this Pipeline has no Whisper model: Pipeline(model=...), or process(transcribe=False)"
        )
    if known:  # a bad clip or an untuned embedding fails before the long stages
        known = {name: [load_clip(name, c) for c in clips] for name, clips in known.items()}
        pipeline.known_speaker_threshold  # noqa: B018 (raises when there is none)
    source = None if isinstance(audio, np.ndarray) else os.fspath(audio)
    if progress is True:
        bar = progress_bar(os.path.basename(source) if source else "audio")
        try:
            return _stages(
                pipeline, audio, source, settings, whisper_options, known, bar, on_segment
            )
        finally:
            bar.close()
    return _stages(
        pipeline, audio, source, settings, whisper_options, known, progress or None, on_segment
    )


def _stages(
    pipeline,
    audio,
    source: str | None,
    settings: ProcessOptions,
    whisper_options: TranscribeOptions,
    known: dict,
    progress: Progress | None,
    on_segment: Callable | None,
) -> Result:
    transcribe, diarize = settings.transcribe, settings.diarize
    parameters = checked_vad_options(whisper_options.vad_parameters)

    def tell(stage: str, done: float, total: float) -> None:
        if progress is not None:
            progress(stage, done, total)

    start = time.perf_counter()
    # through the Pipeline, so its memory lines count the decoded samples
    samples = audio if source is None else pipeline.load_audio(source)
    duration = len(samples) / SAMPLE_RATE
    perf = Performance(duration, start)
    perf.add("decode", time.perf_counter() - start)
    tell("decode", duration, duration)  # seconds, as transcribe counts: the audio's length

    segments, language, diarization = [], None, None
    voices = None
    if known:
        # the voices first: the clustering keeps them apart (diarization/anchors.py)
        tell("known speakers", 0, 1)
        t0 = time.perf_counter()
        voices = known_voices(pipeline, known)
        known_seconds = time.perf_counter() - t0
    if diarize:
        diarization = pipeline.diarize(
            samples, **settings.speakers.keywords(), progress=progress, known_voices=voices
        )
        perf.add_call("diarization", diarization.performance)
    names = {}
    if known:
        t0 = time.perf_counter()
        names = name_known_speakers(pipeline, diarization, known, voices)
        perf.add("known speakers", known_seconds + time.perf_counter() - t0)
        tell("known speakers", 1, 1)
    regions = None  # where a speech detector heard speech (saywho.api.silence)
    if transcribe and settings.skip_silence:
        if diarization is not None:
            regions = [(t.start, t.end) for t in diarization.turns]
        else:
            t0 = time.perf_counter()
            regions = pipeline.speech_regions(samples, parameters)
            perf.add("transcription", time.perf_counter() - t0)
    if transcribe and regions == []:
        tell("transcribe", duration, duration)  # nobody spoke: Whisper has nothing to hear
        perf.add("transcription", 0.0)
        language = whisper_options.language  # the one given; none is detected in silence
    elif transcribe:
        no_speech = whisper_options.no_speech_threshold
        heard = on_segment
        if on_segment is not None and regions is not None:

            def heard(segment) -> None:  # told only of the segments the result keeps
                if drop_silent([segment], regions, no_speech):
                    on_segment(segment)

        segments, info = pipeline.transcribe(
            samples, progress=progress, on_segment=heard, options=whisper_options
        )
        perf.add_call("transcription", info.performance)
        language = info.language
        if regions is not None:
            segments = drop_silent(segments, regions, no_speech)
    if transcribe and diarize:
        tell("alignment", 0, 1)
        t0 = time.perf_counter()
        aligned = align_segments(
            segments,
            diarization.exclusive,
            settings.threshold,
            fill_nearest=settings.fill_nearest,
            overlapping_turns=diarization.turns,
        )
        seconds = time.perf_counter() - t0
        perf.add("alignment", seconds, pipeline.checkpoint("After Alignment").peak_allocated)
        tell("alignment", 1, 1)
    else:
        aligned = _plain_segments(segments)

    models = {}
    if transcribe:
        models["whisper"] = pipeline.model_path
    if diarize:
        segmentation, embedding = pipeline.diarization_models()
        models.update(segmentation=str(segmentation), embedding=str(embedding))
    recorded = {
        "transcribe": transcribe,
        "diarize": diarize,
        **dataclasses.asdict(settings.speakers),
        "alignment_threshold": settings.threshold,
        "fill_nearest": settings.fill_nearest,
        "known_speakers": names or None,
        "vad": settings.vad,
        "skip_silence": settings.skip_silence,
        **(
            {"vad_parameters": dataclasses.asdict(parameters)}
            if settings.vad and parameters
            else {}
        ),
        **{
            k: v
            for k, v in whisper_options.changed().items()
            if k != "vad_filter" and isinstance(v, (bool, int, float, str, type(None)))
        },
    }
    return Result(
        source=source,
        duration=duration,
        language=language,
        segments=aligned,
        speakers=list(diarization.speakers) if diarization else [],
        turns=list(diarization.turns) if diarization else None,
        models=models,
        options=recorded,
        performance=perf.report(memory=pipeline.memory()),
    )
