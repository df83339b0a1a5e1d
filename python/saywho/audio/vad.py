"""Silero VAD v6 on saywho's backend, and faster-whisper's speech timestamps.

The network (read from its ONNX export, the file faster-whisper ships): each
512-sample window with the 64 samples before it, reflect-padded by 128 on
both sides, goes through a 256-tap STFT (a strided convolution; magnitudes
of 129 bins; the first of its 5 frames dropped), four 3-tap convolutions with ReLU, then one LSTM of 128 whose
state runs from window to window across the recording, ReLU, a linear unit
and a sigmoid: one speech probability per 32 ms. The network is the core's
Silero model (csrc/vad/silero.c): weights uploaded once; a recording goes in
as pieces (8.7 minutes of samples at a time: ``ProbabilityStream``), the LSTM's
state and the 64 samples of context carried from piece to piece in the core,
so that memory is one piece's whatever the length, and a memmapped recording
(saywho.audio.store) is read from its file, never copied whole. The pieces
give one call's probabilities within 1e-6 (docs/vad.md).

``speech_timestamps`` turns the probabilities into speech regions with
faster-whisper's rules and option names (VadOptions): a region opens at a
window >= threshold, closes after min_silence_duration_ms below
neg_threshold, is split before max_speech_duration_s (at a silence of at
least 98 ms when there was one), dropped under min_speech_duration_ms, and
padded by speech_pad_ms (half the gap when two regions are closer than
twice that).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..models.onnx_reader import read_onnx
from .decode import SAMPLE_RATE

WINDOW = 512
#: samples per call to the core when a recording is fed in pieces: four of
#: the core's batches of 4096 windows (8 min 44 s). Whole batches, so that
#: every piece but the last asks the backend's pool for the same blocks
#: (pieces of 10 minutes ended in a batch of another size each time, and the
#: pool kept blocks of both); whole windows, so no piece is copied to align it.
PIECE_SAMPLES = 4 * 4096 * WINDOW
# The core's number for the recording a call belongs to (csrc/vad/silero.h):
# plain probabilities() calls are one recording, each ProbabilityStream its
# own, so a stream never goes on from another recording's state.
PLAIN_CALLS = 1
_stream_numbers = itertools.count(PLAIN_CALLS + 1)


@dataclass
class VadOptions:
    """faster-whisper's VadOptions: the same names and defaults."""

    threshold: float = 0.5
    neg_threshold: float | None = None
    min_speech_duration_ms: int = 0
    max_speech_duration_s: float = float("inf")
    min_silence_duration_ms: int = 2000
    speech_pad_ms: int = 400

    def __post_init__(self):
        if not 0.0 <= self.threshold <= 1.0:
            raise _core.OptionError(f"vad threshold must be in [0, 1], not {self.threshold}")
        if self.neg_threshold is not None and not 0.0 <= self.neg_threshold <= 1.0:
            raise _core.OptionError("vad neg_threshold must be in [0, 1]")
        if min(self.min_speech_duration_ms, self.min_silence_duration_ms, self.speech_pad_ms) < 0:
            raise _core.OptionError("vad durations must be >= 0")
        if not self.max_speech_duration_s > 0:
            raise _core.OptionError("vad max_speech_duration_s must be > 0")


def vad_options(parameters) -> VadOptions | None:
    """faster-whisper's ``vad_parameters``: None (the defaults), a VadOptions,
    or a dict of its fields; a name it does not have is an OptionError."""
    if parameters is None or isinstance(parameters, VadOptions):
        return parameters
    if not isinstance(parameters, dict):
        raise _core.OptionError(
            f"vad_parameters must be a dict or saywho.audio.vad.VadOptions, not {parameters!r}"
        )
    names = {f.name for f in dataclasses.fields(VadOptions)}
    unknown = sorted(set(parameters) - names)
    if unknown:
        raise _core.OptionError(
            f"vad_parameters: no option named {', '.join(map(repr, unknown))} "
            f"(VadOptions has {', '.join(sorted(names))})"
        )
    return VadOptions(**parameters)


def default_model_path() -> Path:
    """The Silero VAD v6 export bundled with saywho (MIT; data/SOURCES.md)."""
    return Path(__file__).resolve().parents[1] / "data" / "silero_vad_v6.onnx"


def _gates_to_torch(w: np.ndarray) -> np.ndarray:
    """ONNX's gate blocks i, o, f, c -> the core's i, f, g, o."""
    i, o, f, c = np.split(w, 4, axis=-2 if w.ndim == 3 else -1)
    return np.concatenate([i, f, c, o], axis=-2 if w.ndim == 3 else -1)


def load_silero(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Silero VAD v6's arrays from its ONNX export (16 kHz branch)."""
    name = os.fspath(path)
    init = read_onnx(name).initializers
    want = {
        "encoder.feature_extractor.forward_basis_buffer": (258, 1, 256),
        "encoder.conv_layers.0.weight": (128, 129, 3),
        "encoder.conv_layers.1.weight": (64, 128, 3),
        "encoder.conv_layers.2.weight": (64, 64, 3),
        "encoder.conv_layers.3.weight": (128, 64, 3),
        "decoder.conv1d.weight": (1, 128, 1),
    }
    out = {}
    for key, shape in want.items():
        if key not in init or tuple(np.shape(init[key])) != shape:
            raise _core.ModelError(f"{name}: not Silero VAD v6: no {key} of shape {shape}")
        out[key] = np.asarray(init[key], dtype=np.float32)
        bias = key.replace(".weight", ".bias")
        if bias in init:
            out[bias] = np.asarray(init[bias], dtype=np.float32)
    lstm = [np.asarray(v, np.float32) for v in init.values() if np.shape(v) == (1, 512, 128)]
    biases = [np.asarray(v, np.float32) for v in init.values() if np.shape(v) == (1, 1024)]
    if len(lstm) != 2 or len(biases) != 1:
        raise _core.ModelError(f"{name}: not Silero VAD v6: its LSTM weights are not found")
    # initializers keep the graph's order: W (input) before R (recurrent)
    out["lstm.w_ih"] = _gates_to_torch(lstm[0])
    out["lstm.w_hh"] = _gates_to_torch(lstm[1])
    out["lstm.bias"] = _gates_to_torch(biases[0][:, :512] + biases[0][:, 512:])
    return out


class SileroVad(RuntimeUser):
    """``vad.probabilities(audio) -> [windows]`` on a Runtime (its own CPU one
    when none is given)."""

    def __init__(
        self,
        source: str | os.PathLike[str] | dict[str, np.ndarray],
        runtime: _core.Runtime | None = None,
        batch_size: int = 4096,
    ):
        if batch_size < 1:
            raise _core.OptionError("batch_size must be at least 1")
        tensors = source if isinstance(source, dict) else load_silero(source)
        self._use_runtime(runtime)
        with self._opening():  # a refused model leaves no Runtime open
            self._model = _core.SileroModel(self.runtime, tensors)
        self.batch_size = batch_size

    def probabilities(self, audio: np.ndarray, resume: bool = False) -> np.ndarray:
        """Speech probability of each 512-sample window of ``audio`` (a
        multiple of 512 samples), state carried across all of them; with
        ``resume`` the audio goes on from the end of the previous call's,
        refused (OptionError) unless that call was this method's and
        succeeded (none ran, a ProbabilityStream ran since, or it failed)."""
        return self._probabilities(audio, resume, PLAIN_CALLS)

    def _probabilities(self, audio: np.ndarray, resume: bool, recording: int) -> np.ndarray:
        self._live()  # a ModelError once closed
        x = np.ascontiguousarray(audio, dtype=np.float32).reshape(-1)
        if len(x) % WINDOW:
            raise _core.OptionError(f"audio must be a multiple of {WINDOW} samples")
        return self._model.run(x, min(self.batch_size, 65536), resume=resume, recording=recording)


class ProbabilityStream:
    """A recording's speech probabilities, fed to ``vad`` in pieces of any
    length: ``feed`` each piece in order, then ``finish`` gives what
    ``vad.probabilities`` gives for the whole recording padded with zeros to
    the next window (faster-whisper's padding: always at least one sample).
    At most WINDOW - 1 samples are kept between pieces.

    A stream is one recording to the core: another recording run on the same
    model between two pieces makes the next piece refused (OptionError), as
    does any exception out of ``feed`` or ``finish`` for every later call (the
    pieces taken and the core's state no longer agree): start a new stream
    from the recording's beginning."""

    def __init__(self, vad: SileroVad):
        self._vad = vad
        self._recording = next(_stream_numbers)
        self._parts: list[np.ndarray] = []
        self._rest = np.zeros(0, dtype=np.float32)  # the samples short of a window
        self._started = False
        self._failed = ""  # the error that stopped it (not the exception: it holds frames)
        self.n_samples = 0

    def _run(self, x: np.ndarray) -> None:
        self._parts.append(self._vad._probabilities(x, self._started, self._recording))
        self._started = True

    def _usable(self) -> None:
        if self._failed:
            raise _core.OptionError(
                f"this ProbabilityStream stopped part-way on an error ({self._failed}): its "
                "pieces and the model's state no longer agree; start a new stream from the "
                "recording's beginning"
            )

    def feed(self, samples: np.ndarray) -> None:
        self._usable()
        try:
            self._feed(np.asarray(samples).reshape(-1))
        except BaseException as e:  # KeyboardInterrupt between two runs too
            self._failed = f"{type(e).__name__}: {e}"
            raise

    def _feed(self, x: np.ndarray) -> None:
        self.n_samples += x.size
        if self._rest.size:  # complete the window the last piece began
            take = min(WINDOW - self._rest.size, x.size)
            self._rest = np.concatenate([self._rest, x[:take].astype(np.float32)])
            x = x[take:]
            if self._rest.size < WINDOW:
                return
            self._run(self._rest)
        whole = x.size - x.size % WINDOW
        if whole:
            self._run(x[:whole])
        self._rest = np.array(x[whole:], dtype=np.float32)  # a copy: x may be reused

    def finish(self) -> np.ndarray:
        self._usable()
        try:
            self._run(np.pad(self._rest, (0, WINDOW - self._rest.size)))
        except BaseException as e:
            self._failed = f"{type(e).__name__}: {e}"
            raise
        self._rest = np.zeros(0, dtype=np.float32)
        probs = np.concatenate(self._parts)
        self._parts = []
        return probs


def speech_timestamps(
    probs: np.ndarray, n_samples: int, options: VadOptions | None = None
) -> list[dict[str, int]]:
    """Speech regions [{"start", "end"} in samples] from window probabilities,
    by faster-whisper's rules (see the module's note)."""
    o = options or VadOptions()
    neg = o.neg_threshold if o.neg_threshold is not None else max(o.threshold - 0.15, 0.01)
    sr = SAMPLE_RATE
    min_speech = sr * o.min_speech_duration_ms / 1000
    pad = sr * o.speech_pad_ms / 1000
    max_speech = sr * o.max_speech_duration_s - WINDOW - 2 * pad
    min_silence = sr * o.min_silence_duration_ms / 1000
    split_silence = sr * 98 / 1000

    regions: list[dict[str, int]] = []
    open_at: int | None = None
    silence_from = 0  # where the current stretch below neg began (0: none)
    last_cut = resume = 0  # a silence long enough to split at, and where speech resumed
    for i, p in enumerate(probs):
        at = WINDOW * i
        if p >= o.threshold and silence_from:
            silence_from = 0
            if resume < last_cut:
                resume = at
        if p >= o.threshold and open_at is None:
            open_at = at
            continue
        if open_at is not None and at - open_at > max_speech:
            if last_cut:
                regions.append({"start": open_at, "end": last_cut})
                open_at = None if resume < last_cut else resume
                last_cut = resume = silence_from = 0
            else:
                regions.append({"start": open_at, "end": at})
                open_at = None
                last_cut = resume = silence_from = 0
                continue
        if p < neg and open_at is not None:
            if not silence_from:
                silence_from = at
            if at - silence_from > split_silence:
                last_cut = silence_from
            if at - silence_from < min_silence:
                continue
            if silence_from - open_at > min_speech:
                regions.append({"start": open_at, "end": silence_from})
            open_at = None
            last_cut = resume = silence_from = 0
    if open_at is not None and n_samples - open_at > min_speech:
        regions.append({"start": open_at, "end": n_samples})

    for i, r in enumerate(regions):
        if i == 0:
            r["start"] = int(max(0, r["start"] - pad))
        if i + 1 < len(regions):
            gap = regions[i + 1]["start"] - r["end"]
            if gap < 2 * pad:
                r["end"] += int(gap // 2)
                regions[i + 1]["start"] = int(max(0, regions[i + 1]["start"] - gap // 2))
            else:
                r["end"] = int(min(n_samples, r["end"] + pad))
                regions[i + 1]["start"] = int(max(0, regions[i + 1]["start"] - pad))
        else:
            r["end"] = int(min(n_samples, r["end"] + pad))
    return regions


def speech_sample_regions(
    samples: np.ndarray, runtime, options: VadOptions | None = None
) -> list[tuple[int, int]]:
    """(start, end) sample indices of the speech in ``samples``, by
    faster-whisper's rules, with the bundled Silero on ``runtime``."""
    with SileroVad(default_model_path(), runtime) as vad:
        found = get_speech_timestamps(samples, options, vad)
    return [(r["start"], r["end"]) for r in found]


def get_speech_timestamps(
    audio: np.ndarray, options: VadOptions | None = None, model: SileroVad | None = None
) -> list[dict[str, int]]:
    """faster-whisper's get_speech_timestamps on saywho's Silero: the
    recording read PIECE_SAMPLES at a time (a view of an array or a memmap;
    only a piece that is not float32 is converted, one at a time)."""
    x = np.asarray(audio).reshape(-1)
    own = model is None
    if own:
        model = SileroVad(default_model_path())
    try:
        stream = ProbabilityStream(model)
        for start in range(0, x.size, PIECE_SAMPLES):
            stream.feed(x[start : start + PIECE_SAMPLES])
        probs = stream.finish()
    finally:
        if own:
            model.close()
    return speech_timestamps(probs, x.size, options)
