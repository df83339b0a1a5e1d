"""Recording in, speaker-attributed transcript out: the stages of Pipeline.process.

decode -> transcription (with word timestamps) -> diarization -> alignment.
It drives the Pipeline through its public methods only (transcribe, diarize,
checkpoint), each of which times its stage and ends it with a memory
checkpoint (DESIGN.md's stage lines); ``progress(stage, done, total)`` hears
from every stage. The result's ``performance`` is saywho.performance's shape:
decode, diarization, transcription and alignment, the first two with their
own parts.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable

import numpy as np

from .align import DEFAULT_THRESHOLD, SpeakerSegment, SpeakerWord, align_segments
from .audio import SAMPLE_RATE
from .known_speakers import check_known, known_voices, load_clip, name_known_speakers
from .native import _core
from .performance import Performance
from .progress import progress_bar
from .result import Result
from .silence import drop_silent
from .vad import VadOptions
from .vad import vad_options as checked_vad_options
from .whisper.options import TranscribeOptions

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
    *,
    transcribe: bool = True,
    diarize: bool = True,
    num_speakers: int | None = None,
    min_speakers: int | None = None,
    max_speakers: int | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    vad: bool = False,
    vad_options: VadOptions | dict | None = None,
    skip_silence: bool = True,
    progress: Progress | bool | None = None,
    known_speakers: dict | None = None,
    fill_nearest: bool = True,
    on_segment: Callable | None = None,
    **options,
) -> Result:
    """See :meth:`saywho.Pipeline.process`."""
    known = check_known(known_speakers)
    if known and not diarize:
        raise _core.OptionError("known_speakers needs diarization (diarize=True)")
    given = options.pop("options", None)  # a TranscribeOptions passed whole
    if vad:
        options["vad_filter"] = True
        if vad_options is not None:
            options["vad_parameters"] = vad_options
    # checked now, before any stage runs; faster-whisper's names work too
    whisper_options = TranscribeOptions.build(given, options)
    parameters = checked_vad_options(whisper_options.vad_parameters)
    vad = vad or whisper_options.vad_filter
    if not (transcribe or diarize):
        raise _core.OptionError("process needs transcribe=True, diarize=True or both")
    if not 0.0 <= threshold <= 1.0:
        raise _core.OptionError(f"threshold must be in [0, 1], not {threshold}")
    if transcribe and pipeline.model_path is None:
        raise _core.OptionError(
            "this Pipeline has no Whisper model: Pipeline(model=...), or process(transcribe=False)"
        )
    source = None if isinstance(audio, np.ndarray) else os.fspath(audio)
    if progress is True:
        bar = progress_bar(os.path.basename(source) if source else "audio")
        try:
            return process(
                pipeline,
                audio,
                transcribe=transcribe,
                diarize=diarize,
                num_speakers=num_speakers,
                min_speakers=min_speakers,
                max_speakers=max_speakers,
                threshold=threshold,
                vad=vad,
                vad_options=vad_options,
                skip_silence=skip_silence,
                progress=bar,
                known_speakers=known_speakers,
                fill_nearest=fill_nearest,
                on_segment=on_segment,
                options=given,
                **options,
            )
        finally:
            bar.close()
    if progress is False:
        progress = None

    def tell(stage: str, done: float, total: float) -> None:
        if progress is not None:
            progress(stage, done, total)

    if known:  # a bad clip or an untuned embedding fails before the long stages
        known = {name: [load_clip(name, c) for c in clips] for name, clips in known.items()}
        pipeline.known_speaker_threshold  # noqa: B018 (raises when there is none)

    start = time.perf_counter()
    # through the Pipeline, so its memory lines count the decoded samples
    samples = audio if source is None else pipeline.load_audio(source)
    duration = len(samples) / SAMPLE_RATE
    perf = Performance(duration, start)
    perf.add("decode", time.perf_counter() - start)
    tell("decode", duration, duration)  # seconds, as transcribe counts: the audio's length

    if transcribe and diarize and "word_timestamps" not in options:
        # the alignment needs every word's time
        whisper_options = whisper_options.replace(word_timestamps=True)
        options["word_timestamps"] = True
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
            samples, num_speakers, min_speakers, max_speakers, progress, known_voices=voices
        )
        perf.add_call("diarization", diarization.performance)
    names = {}
    if known:
        t0 = time.perf_counter()
        names = name_known_speakers(pipeline, diarization, known, voices)
        perf.add("known speakers", known_seconds + time.perf_counter() - t0)
        tell("known speakers", 1, 1)
    regions = None  # where a speech detector heard speech (saywho.silence)
    if transcribe and skip_silence:
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
            threshold,
            fill_nearest=fill_nearest,
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
    settings = {
        "transcribe": transcribe,
        "diarize": diarize,
        "num_speakers": num_speakers,
        "min_speakers": min_speakers,
        "max_speakers": max_speakers,
        "alignment_threshold": threshold,
        "fill_nearest": fill_nearest,
        "known_speakers": names or None,
        "vad": vad,
        "skip_silence": skip_silence,
        **({"vad_parameters": dataclasses.asdict(parameters)} if vad and parameters else {}),
        **{
            k: v
            for k, v in {**(given.changed() if given else {}), **options}.items()
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
        options=settings,
        performance=perf.report(memory=pipeline.memory()),
    )
