"""The sequential mode's set-up: the audio, the VAD, the log-mel and the language.

What ``WhisperModel.transcribe`` does without ``batch_size``, as
faster-whisper's ``transcribe``: Silero's speech regions joined (with
``vad_filter``; longer than the audio store's IN_MEMORY_SECONDS, never held
whole: saywho.audio.speech.JoinedSpeech), the log-mel of the whole recording (a
window at a time for a recording decoded onto disk or joined speech that
long: saywho.whisper.windowed_mel), the
language given or detected, then the seek loop (saywho.whisper.seek_loop) over the windows,
its timestamps moved back to the recording's clock when the VAD cut it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..audio.decode import SAMPLE_RATE
from ..audio.speech import JoinedSpeech, SpeechMap
from ..audio.store import IN_MEMORY_SECONDS, on_disk
from ..audio.vad import speech_sample_regions, vad_options
from .clips import clip_seconds, detection_start
from .options import TranscribeOptions
from .seek_loop import seek_segments
from .segments import N_FRAMES, Segment, TranscriptionInfo, audio_samples
from .windowed_mel import WindowedLogMel


def transcribe_sequential(
    model, audio, options: TranscribeOptions, progress=None
) -> tuple[Iterator[Segment], TranscriptionInfo]:
    """WhisperModel.transcribe without batch_size (see its docstring)."""
    clips = clip_seconds(options.clip_timestamps)
    samples, duration = audio_samples(audio)
    speech = None
    # as faster-whisper: clips given replace the VAD ("0" is its default)
    if options.vad_filter and (
        options.clip_timestamps is None or str(options.clip_timestamps) == "0"
    ):
        # faster-whisper's vad_filter: Silero's speech regions, joined,
        # transcribed, and the timestamps moved back (saywho.audio.vad)
        regions = speech_sample_regions(samples, model.runtime, vad_options(options.vad_parameters))
        speech = SpeechMap(regions, in_samples=True)
        if speech.joined_duration > IN_MEMORY_SECONDS:  # read from the recording as needed
            samples = speech.joined(samples)
        else:
            samples = speech.collect(samples)
        if samples.size == 0:  # no speech: nothing to transcribe, but info
            samples = np.zeros(SAMPLE_RATE // 10, dtype=np.float32)
    # faster-whisper computes the log-mel over the audio plus one hop of
    # zeros, then pads each window with zeros in the log-mel domain.
    if isinstance(samples, JoinedSpeech) or on_disk(samples):
        # a long recording: its log-mel would be half its size again
        features = WindowedLogMel(samples, model.dims["n_mels"], model.runtime.threads)
    else:
        features = model.log_mel(samples)
    content_frames = features.shape[-1] - 1
    detect_from = detection_start(clips, content_frames)
    # only the frames detection reads (it reads language_detection_segments windows)
    detect_to = detect_from + options.language_detection_segments * N_FRAMES
    language, language_probability, all_language_probs = model.resolve_language(
        options, lambda: features[:, detect_from:detect_to]
    )
    decoding = model.decoding_options(options)
    info = TranscriptionInfo(
        language=language,
        language_probability=language_probability,
        duration=duration,
        duration_after_vad=speech.joined_duration if speech else duration,
        all_language_probs=all_language_probs,
        options=decoding,
    )
    segments = seek_segments(model, features, language, decoding, clips, progress)
    if speech is not None:
        # one at a time, as decoded: a caller streaming them hears each at once
        segments = _restored(segments, speech) if speech.samples else iter([])
    return segments, info


def _restored(segments, speech):
    """Segments of the VAD-joined audio back on the recording's clock, each
    as soon as it is decoded."""
    for segment in segments:
        yield from speech.restore([segment])
