"""Recording in, speaker-attributed transcript out: the stages of Pipeline.process.

decode -> transcription (with word timestamps) -> diarization -> alignment.
Each stage is timed and followed by a memory checkpoint (DESIGN.md's stage
lines), and reports ``progress(stage, done, total)``. The result's
``performance`` holds every stage's seconds, its x-realtime and the pool's
peak after it, and the whole run's.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable

import numpy as np

from . import _core
from .align import DEFAULT_THRESHOLD, SpeakerSegment, SpeakerWord, align_segments
from .audio import SAMPLE_RATE, load_audio
from .result import Result
from .vad import VadOptions

Progress = Callable[[str, float, float], None]


class _Stages:
    """Times the stages of one run and keeps what ``performance`` reports."""

    def __init__(self, pipeline, duration: float, progress: Progress | None):
        self.pipeline = pipeline
        self.duration = duration
        self.progress = progress
        self.stages: dict[str, dict] = {}
        self.t0 = time.perf_counter()

    def run(self, name: str, checkpoint: str, work: Callable[[], object]):
        start = time.perf_counter()
        out = work()
        seconds = time.perf_counter() - start
        report = self.pipeline.checkpoint(checkpoint)
        self.stages[name] = {
            "seconds": round(seconds, 4),
            "x_realtime": round(self.duration / seconds, 2) if seconds > 0 else None,
            "peak_allocated_bytes": report.peak_allocated,
        }
        return out

    def tell(self, stage: str, done: float, total: float) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

    def performance(self) -> dict:
        total = time.perf_counter() - self.t0
        return {
            "audio_seconds": round(self.duration, 3),
            "total_seconds": round(total, 4),
            "x_realtime": round(self.duration / total, 2) if total > 0 else None,
            "stages": self.stages,
            "peak_allocated_bytes": max(
                (s.get("peak_allocated_bytes", 0) for s in self.stages.values()), default=0
            ),
            # ru_maxrss is in KiB on Linux: the process's high-water mark so far
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }


def _plain_segments(segments) -> list[SpeakerSegment]:
    """Transcribed segments without speakers, in the result's shape."""
    out = []
    for s in segments:
        words = [
            SpeakerWord(float(w.start), float(w.end), w.word, float(w.probability))
            for w in (getattr(s, "words", None) or ())
        ]
        out.append(SpeakerSegment(float(s.start), float(s.end), s.text, None, words))
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
    progress: Progress | None = None,
    **options,
) -> Result:
    """See :meth:`saywho.Pipeline.process`."""
    if vad:
        options.update(vad_filter=True, vad_parameters=vad_options)
    if not (transcribe or diarize):
        raise _core.OptionError("process needs transcribe=True, diarize=True or both")
    if not 0.0 <= threshold <= 1.0:
        raise _core.OptionError(f"threshold must be in [0, 1], not {threshold}")
    if transcribe and pipeline._whisper is None:
        raise _core.OptionError(
            "this Pipeline has no Whisper model: Pipeline(model=...), or process(transcribe=False)"
        )
    source = None if isinstance(audio, np.ndarray) else os.fspath(audio)
    start = time.perf_counter()
    samples = audio if source is None else load_audio(source)
    duration = len(samples) / SAMPLE_RATE
    stages = _Stages(pipeline, duration, progress)
    stages.stages["decode"] = {"seconds": round(time.perf_counter() - start, 4)}
    stages.tell("decode", 1, 1)

    if transcribe and diarize:
        options.setdefault("word_timestamps", True)
    segments, language, diarization = [], None, None
    if diarize:
        diarization = stages.run(
            "diarization",
            "After Diarization",
            lambda: pipeline.diarize(samples, num_speakers, min_speakers, max_speakers, progress),
        )
    if transcribe:

        def run_whisper():
            found, info = pipeline._whisper.transcribe(samples, progress=progress, **options)
            return list(found), info

        segments, info = stages.run("transcription", "After Transcription", run_whisper)
        language = info.language
    if transcribe and diarize:
        stages.tell("alignment", 0, 1)
        aligned = stages.run(
            "alignment",
            "After Alignment",
            lambda: align_segments(segments, diarization.exclusive, threshold),
        )
        stages.tell("alignment", 1, 1)
    else:
        aligned = _plain_segments(segments)

    models = {}
    if transcribe:
        models["whisper"] = str(pipeline._whisper.path)
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
        "vad": vad,
        **{
            k: v
            for k, v in options.items()
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
        performance=stages.performance(),
    )
