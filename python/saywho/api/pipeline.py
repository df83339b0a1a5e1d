"""The Pipeline: one device, its memory, and the stages that run on it.

Open it in a ``with`` block; leaving the block (also on an exception) or
calling ``close()`` returns every byte the core took.
"""

from __future__ import annotations

import logging
import os
import time
import weakref

import numpy as np

from .._internal.device import cpu_reason, open_runtime
from .._internal.memory import MemoryReport, log_checkpoint, memory_report
from .._internal.native import _core
from .._internal.performance import Performance
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE, load_audio
from ..audio.store import on_disk
from ..diarization.diarize import Diarization, Diarizer
from ..diarization.pretrained import open_pipeline
from ..diarization.speaker_counts import SpeakerCounts
from ..models.bundled import resolve_embedding, resolve_segmentation
from ..models.pyannote_hub import resolve_pipeline
from ..whisper.options import TranscribeOptions, option_keywords
from ..whisper.transcribe import Segment, TranscriptionInfo, WhisperModel
from .known_speakers import load_clip, threshold_for
from .process import process
from .process_options import ProcessOptions, process_keywords
from .result import Result
from .silence import speech_regions

log = logging.getLogger("saywho")


class Pipeline(RuntimeUser):
    """saywho's entry point.

    ``model`` is Whisper: a folder, a name ("small", "large-v3-turbo", ...) or
    a Hugging Face repo id, fetched through huggingface_hub on first use;
    "auto" is large-v3-turbo on a GPU and small on the CPU; None loads no
    Whisper (the Pipeline then only diarizes). ``device`` is "auto" (the GPU when the CUDA backend loads and a GPU
    answers, else the CPU, saying why), "cpu", "cuda" or "cuda:N";
    ``device="cuda"`` without a usable GPU raises ``DeviceError``. ``threads``
    sizes the CPU backend (0: one per CPU this process may use).
    ``compute_type`` is faster-whisper's: "default" (float32), "int8", "auto",
    "bfloat16" (CPU and CUDA), and on the CUDA backend "float16", "int8_float16".
    ``diarization``: True or None for saywho's default models, False for
    none (``process`` then only transcribes), or pyannote's pipeline by name
    ("pyannote/speaker-diarization-3.1", "...-community-1", or a folder holding
    its config.yaml), whose gated files come from the Hugging Face hub with
    ``token`` (docs/pyannote_pipelines.md). ``embedding_step`` (seconds, a
    multiple of the chunk step) embeds each local speaker only in chunks
    that far apart and lets the chunks between reuse those embeddings:
    about twice as fast at 2 s, an approximation of pyannote's every-chunk
    embeddings (docs/diarization.md has its DER); None (default) embeds in
    every chunk.
    """

    _parts = ("_whisper", "_diarizer")

    def __init__(
        self,
        model: str | os.PathLike | None = None,
        device: str = "auto",
        threads: int = 0,
        log_memory: bool = True,
        segmentation: str | os.PathLike | None = None,
        embedding: str | os.PathLike | None = None,
        compute_type: str = "default",
        diarization: bool | str | os.PathLike | None = None,
        token: str | bool | None = None,
        embedding_step: float | None = None,
    ):
        if not isinstance(threads, int) or threads < 0:
            raise _core.OptionError(f"threads must be an int >= 0, not {threads!r}")
        self._whisper = None
        self._diarizer = None
        self._diarization_models = (segmentation, embedding)
        # the chunk step is 1 s for saywho's models and pyannote's pipelines
        if embedding_step is not None and (
            isinstance(embedding_step, bool)
            or not isinstance(embedding_step, (int, float))
            or embedding_step not in range(1, 11)
        ):
            raise _core.OptionError(
                f"embedding_step must be a whole number of seconds from 1 to 10 (the chunk "
                f"step is 1 s), not {embedding_step!r}"
            )
        self._embedding_step = embedding_step
        # a pyannote pipeline by name ("pyannote/speaker-diarization-3.1"),
        # or True/None for saywho's own models; its files resolve on first use
        if diarization is not None and not isinstance(diarization, (bool, str, os.PathLike)):
            raise _core.OptionError(
                f"diarization must be True or a pipeline name, not {diarization!r}"
            )
        if isinstance(diarization, (str, os.PathLike)) and (segmentation or embedding):
            raise _core.OptionError("give diarization=NAME or segmentation=/embedding=, not both")
        self._diarization = None if isinstance(diarization, bool) else diarization
        self._diarize_by_default = diarization is not False
        self._pipeline_files = None
        self._token = token
        self._use_runtime(None, lambda: open_runtime(device, threads))
        self._log_memory = log_memory
        self._memory_warned: dict = {}  # stage -> threshold last warned at (once per stage)
        self._decoded = None  # weakref to the last samples decoded from a file
        self.checkpoint("After Pipeline Start")
        if model is not None:
            with self._opening():
                self._whisper = WhisperModel(model, self.runtime, compute_type=compute_type)
            self.checkpoint("After Whisper Load")

    # -- lifecycle -----------------------------------------------------------
    def close(self) -> None:
        """Returns all memory of the core; calling it again does nothing."""
        if not self._closed:
            super().close()
            log.debug("saywho pipeline closed")

    def __del__(self):
        # A pipeline dropped without close() still gives its memory back.
        runtime = getattr(self, "runtime", None)
        if runtime is not None:
            runtime.close()

    def _open_runtime(self) -> _core.Runtime:
        if self.closed:
            raise _core.DeviceError("this Pipeline is closed")
        return self.runtime

    # -- device and memory ---------------------------------------------------
    @property
    def device(self) -> str:
        """ "cpu" or "cuda": where this pipeline runs."""
        return self._open_runtime().device

    @property
    def device_name(self) -> str:
        return self._open_runtime().device_name

    @property
    def fallback_reason(self) -> str | None:
        """Why device="auto" chose the CPU, or None (saywho._internal.device.cpu_reason:
        the driver hint only where an NVIDIA device exists)."""
        reason = self.runtime.fallback_reason
        return cpu_reason(reason) if reason else None

    def memory(self) -> MemoryReport:
        """The pools' allocated, reserved and peak bytes, the model file bytes
        computed from where they lie (``mapped``), and the device's free/total:
        the GPU's, or on the CPU what this process can still have under the
        tighter of the machine's and its cgroup's limits (``source``: "host"
        or "cgroup"; saywho._internal.memory.system_memory()), and ``audio``: the bytes
        of the decoded samples this Pipeline read (``load_audio``, ``process``)
        that are still alive somewhere.

        After close() every count is zero.
        """
        mapped = self._whisper.mapped_bytes if self._whisper is not None else 0
        samples = self._decoded() if self._decoded is not None else None
        audio = samples.nbytes if samples is not None else 0
        if on_disk(samples):  # a long recording's, in a temporary file (audio_store)
            return memory_report(self.runtime, mapped, 0, audio)
        return memory_report(self.runtime, mapped, audio)

    def checkpoint(self, stage: str) -> MemoryReport:
        """Logs the memory line for ``stage`` (and a warning above 70% / 85%,
        once per stage: again only on crossing a higher threshold)."""
        report = self.memory()
        if self._log_memory:
            log_checkpoint(report, stage, self._memory_warned)
        return report

    # -- stages --------------------------------------------------------------
    def load_audio(self, source, sample_rate: int | None = None, **store) -> np.ndarray:
        """16 kHz mono float32 samples of a file or an array (see saywho.load_audio;
        ``store``: its ``in_memory_seconds`` and ``temp_dir``).

        The memory lines count the samples decoded from a file while they are
        alive (a weak reference: this Pipeline keeps nothing alive), those of
        a long recording as on disk (saywho.audio.store)."""
        self._open_runtime()
        samples = load_audio(source, sample_rate=sample_rate, **store)
        if not isinstance(source, np.ndarray):
            self._decoded = weakref.ref(samples)
        return samples

    @option_keywords
    def transcribe(
        self,
        audio,
        on_segment=None,
        *,
        options: TranscribeOptions | None = None,
        progress=None,
        **keywords,
    ) -> tuple[list[Segment], TranscriptionInfo]:
        """Whisper transcription with faster-whisper's options and results.

        ``audio`` is a path or 16 kHz mono samples. The options are
        saywho.TranscribeOptions' fields as keywords, or one passed whole as
        ``options=`` (keywords then change it); they are checked before the
        audio is read. Returns the segments as a
        list (all decoded) and the info, whose ``performance`` gives seconds
        per stage, x realtime and peak pool memory; ``progress=`` takes a
        ``(stage, done, total)`` callback. ``on_segment(segment)``, if given,
        hears each segment as soon as it is decoded, before ``transcribe``
        returns (to stream the text; an exception it raises stops the run).
        See saywho.whisper.transcribe.
        """
        self._open_runtime()
        if self._whisper is None:
            raise _core.OptionError("this Pipeline has no model: Pipeline(model=...) loads one")
        options = TranscribeOptions.build(options, keywords)
        start = time.perf_counter()
        samples = audio if isinstance(audio, np.ndarray) else load_audio(audio)
        decoded = time.perf_counter()
        perf = Performance(samples.size / SAMPLE_RATE, start)
        perf.add("decode", decoded - start)
        if progress is not None and not isinstance(audio, np.ndarray):
            # the audio's length, before any long stage (process() told it already)
            progress("decode", perf.audio_seconds, perf.audio_seconds)
        segments, info = self._whisper.transcribe(samples, options=options, progress=progress)
        segments = list(segments if on_segment is None else _heard(segments, on_segment))
        seconds = time.perf_counter() - decoded
        report = self.checkpoint("After Transcription")
        perf.add("transcription", seconds, report.peak_allocated)
        info.performance = perf.report(report.peak_allocated, report)
        return segments, info

    def diarize(
        self,
        audio,
        num_speakers: int | None = None,
        min_speakers: int | None = None,
        max_speakers: int | None = None,
        progress=None,
        known_voices: np.ndarray | None = None,
    ) -> Diarization:
        """Who spoke when (pyannote 3.1's algorithm): turns, exclusive turns and
        each speaker's embedding. The models load on first use, from
        ``Pipeline(segmentation=..., embedding=...)`` (paths or names:
        "segmentation-3.0", "campp", "ge2e"), pyannote's pipeline named by
        ``Pipeline(diarization=..., token=...)``, else the bundled
        segmentation-3.0 and CAM++. ``known_voices`` [voices, dimension]
        (saywho.api.known_speakers.known_voices): voices the clustering keeps
        apart wherever it hears them. The counts (saywho.diarization.speaker_counts) are
        checked before any audio is read."""
        SpeakerCounts(num_speakers, min_speakers, max_speakers)
        diarizer = self._open_diarizer()
        anchors = {}
        if known_voices is not None:
            anchors = {"anchors": known_voices, "anchor_threshold": self.known_speaker_threshold}
        result = diarizer(audio, num_speakers, min_speakers, max_speakers, progress, **anchors)
        report = self.checkpoint("After Diarization")
        result.performance["peak_allocated_bytes"] = report.peak_allocated
        result.performance["memory"] = report.figures()
        return result

    def _open_diarizer(self) -> Diarizer:
        runtime = self._open_runtime()
        if self._diarizer is None:
            if self._diarization is not None:
                self.diarization_models()  # resolves (and downloads) the files
                self._diarizer = open_pipeline(
                    self._pipeline_files, runtime, embedding_step=self._embedding_step
                )
            else:
                self._diarizer = Diarizer(
                    *self.diarization_models(), runtime, embedding_step=self._embedding_step
                )
            self.checkpoint("After Diarization Load")
        return self._diarizer

    def speaker_embedding(self, audio) -> np.ndarray:
        """One voice's embedding [dimension] from the diarization's own
        embedding model: ``audio`` (a path or 16 kHz mono samples, at least
        1 s) is taken as one person speaking throughout. It lives in the
        space of the centroids ``diarize`` returns (compare them by cosine)."""
        embedding = self._open_diarizer().embedding
        samples = load_clip(None, audio)
        return np.asarray(embedding(samples[None, :])[0], dtype=np.float32)

    @property
    def known_speaker_threshold(self) -> float:
        """The cosine similarity at which a clip's voice and a found speaker
        are one (saywho.api.known_speakers), for this pipeline's embedding."""
        return threshold_for(self._open_diarizer().embedding)

    def speech_regions(self, audio, vad_options=None) -> list[tuple[float, float]]:
        """(start, end) seconds where Silero VAD hears speech, by faster-whisper's
        rules (``vad_options``: saywho.audio.vad.VadOptions or a dict of its fields)."""
        samples = audio if isinstance(audio, np.ndarray) else self.load_audio(audio)
        return speech_regions(samples, self._open_runtime(), vad_options)

    @property
    def model_path(self) -> str | None:
        """The Whisper model's folder, or None when the Pipeline has no model."""
        return None if self._whisper is None else str(self._whisper.path)

    @property
    def languages(self) -> tuple[str, ...]:
        """The language codes the Whisper model decodes: ("en",) for an
        English-only (.en) model, which also cannot translate; () without one."""
        if self._whisper is None:
            return ()
        if not self._whisper.is_multilingual:
            return ("en",)
        return tuple(self._whisper.tokenizer.languages)

    def diarization_models(self) -> tuple[str | os.PathLike, str | os.PathLike]:
        """(segmentation, embedding) paths: the named pipeline's, the ones given
        (a name resolves as saywho.models.bundled says), else the models the
        wheel ships."""
        if self._diarization is not None:
            if self._pipeline_files is None:
                self._pipeline_files = resolve_pipeline(self._diarization, token=self._token)
            return self._pipeline_files.segmentation, self._pipeline_files.embedding
        segmentation, embedding = self._diarization_models
        return resolve_segmentation(segmentation), resolve_embedding(embedding)

    @process_keywords
    def process(
        self,
        audio,
        *,
        progress=None,
        on_segment=None,
        options: TranscribeOptions | None = None,
        **keywords,
    ) -> Result:
        """Who said what, and when: transcription, diarization and alignment.

        ``audio`` is a path or 16 kHz mono samples. Every word gets the
        speaker whose exclusive turn covers most of it (at least
        ``threshold`` of its duration, else see ``fill_nearest``); segments
        split at the word where the speaker changes. ``vad=True`` transcribes only the speech Silero VAD finds, as
        faster-whisper's ``vad_filter`` (``vad_options``: saywho.audio.vad.VadOptions
        or a dict of its fields); faster-whisper's own names, ``vad_filter``
        and ``vad_parameters``, do the same. The settings go in the result's
        options. ``skip_silence`` (default True) keeps no text where nobody
        spoke: Whisper is not run when the diarization (or, transcribing
        only, Silero VAD) finds no speech at all, and a segment Whisper rates
        likely silent (no_speech_prob > no_speech_threshold) is dropped when
        no speech overlaps it (saywho.api.silence).
        ``num_speakers``, or ``min_speakers`` and/or ``max_speakers`` (not
        with ``num_speakers``: saywho.diarization.speaker_counts), bound the speakers found.
        ``transcribe=False`` or ``diarize=False`` skips a stage (``diarize``
        defaults to True unless the Pipeline was opened with diarization=False);
        other keyword options go to Whisper (saywho.TranscribeOptions: faster-whisper's
        names), or one TranscribeOptions passed whole as ``options=``.
        ``progress(stage, done, total)`` hears from every stage; ``True``
        draws a bar (tqdm.auto's when tqdm is installed, so it draws in a
        notebook too). The result's ``performance`` gives each stage's
        seconds, x-realtime and peak memory.

        ``known_speakers``: {name: clip} (a path, 16 kHz mono samples, or a
        list of them) names the found speakers whose voice matches a clip
        (saywho.api.known_speakers); the others keep SPEAKER_xx.
        ``fill_nearest`` (default True, as WhisperX's): a word under no turn
        takes the nearest speaker; False leaves it "UNKNOWN".
        ``on_segment(segment)`` hears each Whisper segment the result keeps as
        soon as it is decoded (after the diarization, which runs first; the
        speakers come with the result, after alignment), to stream the text.
        """
        # every option checked (the speaker counts too) before any audio is read
        settings, whisper_options = ProcessOptions.split(
            keywords, options, diarize_by_default=self._diarize_by_default
        )
        self._open_runtime()
        return process(self, audio, settings, whisper_options, progress, on_segment)


def _heard(segments, on_segment):
    """The segments, each told to ``on_segment`` as it comes."""
    for segment in segments:
        on_segment(segment)
        yield segment
