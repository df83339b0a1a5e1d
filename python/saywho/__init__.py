"""saywho: who said what, and when.

One native engine for transcription (Whisper), diarization (pyannote's
models and algorithm) and their alignment, with a C/CUDA core that needs
neither torch nor torchaudio.

This file only re-exports: each name is defined in the module it comes from,
and no module of saywho imports this one (scripts/import_graph.py).
"""

from ._internal.native import AudioError, DeviceError, ModelError, OptionError, SaywhoError, _core
from .api.pipeline import Pipeline
from .api.result import Result
from .api.speaker_words import align_segments, exclusive_turns
from .audio.decode import SAMPLE_RATE, load_audio
from .audio.features import fbank, log_mel_spectrogram, pad_or_trim
from .audio.sample import sample_path
from .diarization import Diarization, diarize
from .whisper.options import TranscribeOptions

__version__ = _core.__version__

__all__ = [
    "AudioError",
    "Diarization",
    "DeviceError",
    "ModelError",
    "OptionError",
    "Pipeline",
    "Result",
    "SAMPLE_RATE",
    "SaywhoError",
    "TranscribeOptions",
    "align_segments",
    "diarize",
    "exclusive_turns",
    "fbank",
    "load_audio",
    "log_mel_spectrogram",
    "pad_or_trim",
    "sample_path",
]
