"""saywho: who said what, and when.

One native engine for transcription (Whisper), diarization (pyannote's
models and algorithm) and their alignment, with a C/CUDA core that needs
neither torch nor torchaudio.
"""

import numpy  # noqa: F401  (its own OpenBLAS loads first, under the caller's variables)

from .blas_kernels import loading_core

with loading_core():  # saywho's OpenBLAS takes the kernels of saywho's level
    from . import _core
from ._core import AudioError, DeviceError, ModelError, OptionError, SaywhoError
from .align import align_segments, exclusive_turns
from .audio import SAMPLE_RATE, load_audio
from .diarization import Diarization, diarize
from .features import fbank, log_mel_spectrogram, pad_or_trim
from .pipeline import Pipeline
from .result import Result
from .sample import sample_path

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
    "align_segments",
    "diarize",
    "exclusive_turns",
    "fbank",
    "load_audio",
    "log_mel_spectrogram",
    "pad_or_trim",
    "sample_path",
]
