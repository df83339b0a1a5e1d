"""pyannote's segmentation-3.0 network: weights, sliding windows, frame timing.

The network itself runs in the C core (csrc/diar/segmentation.c); this module
turns a checkpoint into the named arrays it expects (docs/segmentation.md),
cuts audio into the 10 s windows pyannote feeds it, and says which stretch of
audio each output frame stands for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE
from ..models.onnx_reader import Node, read_onnx
from .segmentation_torch import load_pytorch_segmentation

CLASSES = 7
HIDDEN = 128
LSTM_LAYERS = 4

# SincNet's strided layers, input to output: (kernel, stride) in frames.
_LAYERS = ((251, 10), (3, 3), (5, 1), (3, 3), (5, 1), (3, 3))

# What the export must say for our fixed kernels to be the same computation.
_EPS = 1e-5
_SLOPE = 0.01
_ONNX_OPS = {
    "Abs",
    "Add",
    "Concat",
    "ConstantOfShape",
    "Conv",
    "Equal",
    "Gather",
    "If",
    "InstanceNormalization",
    "LSTM",
    "LeakyRelu",
    "LogSoftmax",
    "MatMul",
    "MaxPool",
    "Reshape",
    "Shape",
    "Slice",
    "Squeeze",
    "Transpose",
    "Unsqueeze",
}


@dataclass(frozen=True)
class FrameTiming:
    """Where output frame i sits in its window, from the conv arithmetic.

    Frame i sees samples [i * step, i * step + duration) of the window (its
    receptive field); its time is usually taken as the centre of that span.
    """

    step: float  # seconds between frames: 10 * 3 * 3 * 3 = 270 samples
    duration: float  # receptive field: 991 samples

    def start(self, i: np.ndarray | int) -> np.ndarray | float:
        return np.asarray(i) * self.step

    def center(self, i: np.ndarray | int) -> np.ndarray | float:
        return np.asarray(i) * self.step + self.duration / 2


def frame_timing(sample_rate: int = SAMPLE_RATE) -> FrameTiming:
    """Receptive field of one output frame, derived from SincNet's layers."""
    size, step = 1, 1
    for kernel, stride in reversed(_LAYERS):
        size = (size - 1) * stride + kernel
    for _, stride in _LAYERS:
        step *= stride
    return FrameTiming(step=step / sample_rate, duration=size / sample_rate)


def num_frames(samples: int) -> int:
    """Output frames for a window of ``samples`` samples (589 for 10 s)."""
    return _core.segmentation_frames(int(samples))


def sliding_windows(
    samples: np.ndarray,
    duration: float = 10.0,
    step: float = 1.0,
    sample_rate: int = SAMPLE_RATE,
) -> tuple[np.ndarray, np.ndarray]:
    """Cuts mono audio into windows the way pyannote's inference does.

    Returns (chunks float32 [n, window], starts in seconds [n]). Whole windows
    start every ``step``; when they do not end exactly at the end of the audio
    (or the audio is shorter than one window), one more window starts where
    the next whole one would and is padded with zeros to full length.
    """
    x = np.ascontiguousarray(samples, dtype=np.float32).reshape(-1)
    window, hop = round(duration * sample_rate), round(step * sample_rate)
    if window < 1 or hop < 1:
        raise _core.OptionError("duration and step must be positive")
    whole = (len(x) - window) // hop + 1 if len(x) >= window else 0
    partial = len(x) < window or (len(x) - window) % hop > 0
    chunks = np.zeros((whole + int(partial), window), dtype=np.float32)
    if whole:
        view = np.lib.stride_tricks.sliding_window_view(x, window)[::hop][:whole]
        chunks[:whole] = view
    if partial:
        tail = x[whole * hop :]
        chunks[whole, : len(tail)] = tail
    starts = np.arange(len(chunks), dtype=np.float64) * hop / sample_rate
    return chunks, starts


# ---- weights ----


def _gates_to_torch(w: np.ndarray) -> np.ndarray:
    """ONNX orders an LSTM's gate blocks i, o, f, c; PyTorch (and the core) i, f, g, o."""
    i, o, f, c = np.split(w, 4, axis=-2 if w.ndim == 3 else -1)
    return np.concatenate([i, f, c, o], axis=-2 if w.ndim == 3 else -1)


def _nodes(nodes: list[Node]):
    """Nodes in order, descending into an If's then-branch (the batch-of-one
    path of the export; the else-branch holds the same conv, reshaped)."""
    for n in nodes:
        yield n
        if n.op_type == "If":
            yield from _nodes(n.attributes["then_branch"].nodes)


def _check(cond: bool, what: str, path: str) -> None:
    if not cond:
        raise _core.ModelError(f"{path}: not a pyannote segmentation-3.0 export: {what}")


def _from_onnx(path: str) -> dict[str, np.ndarray]:
    model = read_onnx(path)
    init = model.initializers
    nodes = list(_nodes(model.nodes))
    unknown = sorted({n.op_type for n in nodes} - _ONNX_OPS)
    _check(not unknown, f"unexpected operators {unknown}", path)

    def of(op: str) -> list[Node]:
        return [n for n in nodes if n.op_type == op]

    def weight(name: str) -> np.ndarray:
        _check(name in init, f"{name!r} is not an initializer", path)
        return np.asarray(init[name], dtype=np.float32)

    out: dict[str, np.ndarray] = {}
    norms = of("InstanceNormalization")
    _check(len(norms) == 4, f"{len(norms)} instance norms, 4 expected", path)
    for n in norms:
        _check(abs(n.attributes.get("epsilon", 1e-5) - _EPS) < 1e-9, "instance norm epsilon", path)
    for key, n in zip(["wav_norm1d", "norm1d.0", "norm1d.1", "norm1d.2"], norms):
        out[f"sincnet.{key}.weight"] = weight(n.inputs[1])
        out[f"sincnet.{key}.bias"] = weight(n.inputs[2])

    convs, seen = [], set()
    for n in of("Conv"):
        if n.inputs[1] not in seen:
            seen.add(n.inputs[1])
            convs.append(n)
    _check(len(convs) == 3, f"{len(convs)} distinct convolutions, 3 expected", path)
    for n, stride in zip(convs, (10, 1, 1)):
        a = n.attributes
        _check(list(a.get("strides", [1])) == [stride], f"conv strides {a.get('strides')}", path)
        _check(not any(a.get("pads", [0, 0])), "padded convolution", path)
        _check(list(a.get("dilations", [1])) == [1] and a.get("group", 1) == 1, "conv", path)
    out["sincnet.conv1d.0.weight"] = weight(convs[0].inputs[1])
    _check(len(convs[0].inputs) < 3 or not convs[0].inputs[2], "sinc filters with a bias", path)
    for i in (1, 2):
        out[f"sincnet.conv1d.{i}.weight"] = weight(convs[i].inputs[1])
        out[f"sincnet.conv1d.{i}.bias"] = weight(convs[i].inputs[2])
    for n in of("MaxPool"):
        a = n.attributes
        ok = list(a.get("kernel_shape", [])) == [3] and list(a.get("strides", [])) == [3]
        _check(ok and not any(a.get("pads", [0, 0])) and not a.get("ceil_mode", 0), "pool", path)
    for n in of("LeakyRelu"):
        _check(abs(n.attributes.get("alpha", 0.01) - _SLOPE) < 1e-9, "leaky ReLU slope", path)

    lstms = of("LSTM")
    _check(len(lstms) == LSTM_LAYERS, f"{len(lstms)} LSTM layers", path)
    for i, n in enumerate(lstms):
        a = n.attributes
        _check(a.get("hidden_size") == HIDDEN, "LSTM hidden size", path)
        _check(a.get("direction") in (b"bidirectional", "bidirectional"), "LSTM direction", path)
        _check("clip" not in a and "activations" not in a and not a.get("input_forget"), "", path)
        b = weight(n.inputs[3])  # [2, 8H]: Wb then Rb, summed once here
        out[f"lstm.{i}.weight_ih"] = _gates_to_torch(weight(n.inputs[1]))
        out[f"lstm.{i}.weight_hh"] = _gates_to_torch(weight(n.inputs[2]))
        out[f"lstm.{i}.bias"] = _gates_to_torch(b[:, : 4 * HIDDEN] + b[:, 4 * HIDDEN :])

    matmuls = of("MatMul")
    _check(len(matmuls) == 3, f"{len(matmuls)} matrix products, 3 expected", path)
    for key, n in zip(["linear.0", "linear.1", "classifier"], matmuls):
        adds = [a for a in of("Add") if n.outputs[0] in a.inputs]
        _check(len(adds) == 1, f"no bias after {n.name}", path)
        bias = [x for x in adds[0].inputs if x != n.outputs[0]][0]
        out[f"{key}.weight"] = np.ascontiguousarray(weight(n.inputs[1]).T)  # [in, out] -> [out, in]
        out[f"{key}.bias"] = weight(bias)
    soft = of("LogSoftmax")
    _check(len(soft) == 1 and soft[0].attributes.get("axis", -1) in (-1, 2), "log-softmax", path)
    return out


def load_segmentation(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Named float32 arrays of segmentation-3.0 (docs/segmentation.md) from
    its ONNX export or pyannote's own checkpoint (pytorch_model.bin), told
    apart by the file's first bytes (a zip archive is a torch checkpoint)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise _core.ModelError(f"{name}: cannot read segmentation weights: {e.strerror}") from None
    if head.startswith(b"PK") or not name.endswith(".onnx"):
        return load_pytorch_segmentation(name)
    return _from_onnx(name)


class SegmentationModel(RuntimeUser):
    """segmentation-3.0 on a Runtime: ``run(chunks [B, T]) -> [B, frames, 7]``.

    ``source`` is a path or a dict of named arrays. Without a runtime the
    model opens a CPU one of its own and closes it in ``close()``.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | dict[str, np.ndarray],
        runtime: _core.Runtime | None = None,
        batch_size: int = 16,
    ) -> None:
        tensors = source if isinstance(source, dict) else load_segmentation(source)
        if batch_size < 1:
            raise _core.OptionError("batch_size must be at least 1")
        self._use_runtime(runtime)
        with self._opening():
            self._model = _core.SegmentationModel(self.runtime, tensors)
        # Each batch item holds SincNet's first layer, [16,000 x 80] floats
        # for 10 s: batches bound the peak memory, not the speed.
        self.batch_size = batch_size
        self.timing = frame_timing()

    def run(self, chunks: np.ndarray) -> np.ndarray:
        """Log-probabilities of the 7 powerset classes per frame."""
        x = np.ascontiguousarray(chunks, dtype=np.float32)
        if x.ndim == 1:
            x = x[None]
        if x.ndim != 2 or len(x) == 0:
            raise _core.OptionError("chunks must be float32 [batch, samples]")
        model = self._live()
        parts = [model.run(x[i : i + self.batch_size]) for i in range(0, len(x), self.batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def run_span(
        self, span: np.ndarray, offsets: np.ndarray, window: int, on_device=None
    ) -> np.ndarray:
        """``run`` on the windows span[o : o + window] of one span (offsets
        multiples of 10 samples, each window inside the span): SincNet's first
        convolution is done once over the stretch each batch covers instead of
        once per window, the same up to float rounding (its input norm is
        affine). Overlapping windows are where this pays: at pyannote's 1 s
        step every sample was convolved ten times.

        ``on_device``: a ``_core.AudioSpan`` of ``span`` (the Diarizer's,
        which the speaker embedding reads too), read instead of uploading the
        span again where one call takes the whole span."""
        model = self._live()
        x = np.ascontiguousarray(span, dtype=np.float32).reshape(-1)
        offsets = np.asarray(offsets, dtype=np.int64)
        parts = []
        for i in range(0, len(offsets), self.batch_size):
            o = offsets[i : i + self.batch_size]
            lo, hi = int(o[0]), int(o.max()) + window
            whole = on_device is not None and lo == 0 and hi == len(x)
            parts.append(model.run_span(x[lo:hi], o - lo, window, on_device if whole else None))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
