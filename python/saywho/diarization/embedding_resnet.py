"""WeSpeaker's ResNet34, the speaker encoder of pyannote 3.1, behind the embedding interface.

pyannote/wespeaker-voxceleb-resnet34-LM: 80-bin Kaldi fbank (Hamming window,
samples scaled by 32768, each bin's mean over time removed), a ResNet34 of
BasicBlocks [3, 4, 6, 3] with 32, 64, 128 and 256 channels over the
(frequency x time) image, the last three stages halving both axes;
statistics pooling (mean and standard deviation over time of every
channel and frequency row, 2 x 256 x 10 values) and one linear layer to 256.
pyannote weighs the pooling by the speaker's mask, resampled to the last
stage's frames; the variance is the weighted, unbiased one.

The network is the core's ResNet34 model (csrc/diar/resnet34.c): created
once from the folded arrays, its weights uploaded once, one call per batch of
chunks from fbank to embeddings, the masked pooling included. BatchNorm is
folded into the convolutions here, at load time.

No PyPI package carries this network's trained weights; saywho's tests run it
on random weights against onnxruntime (tests/test_resnet_embedding.py), and
the diarization tests use the GE2E encoder (embedding_ge2e.py) instead.
"""

from __future__ import annotations

import os

import numpy as np

from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE
from ..audio.features import fbank
from ..models.torch_checkpoint import load_checkpoint, state_dict
from .clustering import MERGE_DISTANCE_THRESHOLD
from .embedding_ge2e import waveform_batch

BLOCKS = (3, 4, 6, 3)
CHANNELS = (32, 64, 128, 256)
FEAT_DIM = 80
EMBED_DIM = 256
BN_EPS = 1e-5
STD_EPS = 1e-7  # inside the square root, as WeSpeaker's pooling


def _layer_names() -> list[tuple[str, int, int, int]]:
    """(prefix, in channels, out channels, stride) of every BasicBlock."""
    out, c_in = [], CHANNELS[0]
    for stage, (blocks, c_out) in enumerate(zip(BLOCKS, CHANNELS)):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            out.append((f"layer{stage + 1}.{i}", c_in, c_out, stride))
            c_in = c_out
    return out


def _fold(w: np.ndarray, bn: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    scale = bn["weight"] / np.sqrt(bn["running_var"] + BN_EPS)
    return (
        (w * scale[:, None, None, None]).astype(np.float32),
        (bn["bias"] - bn["running_mean"] * scale).astype(np.float32),
    )


def fold_state_dict(sd: dict[str, np.ndarray], path: str = "weights") -> dict[str, np.ndarray]:
    """pyannote's (or WeSpeaker's) state dict -> folded conv weights and biases.

    Names may carry pyannote's ``resnet.`` prefix or not. Returns arrays named
    ``conv1``, ``layerS.I.conv1`` ... (weight [C_out, C_in, k, k]; ``.b`` the
    bias), ``seg_1.weight`` and ``seg_1.bias``.
    """
    prefix = "resnet." if any(k.startswith("resnet.") for k in sd) else ""

    def get(name: str, shape: tuple | None = None) -> np.ndarray:
        key = prefix + name
        if key not in sd:
            raise _core.ModelError(f"{path}: not a WeSpeaker ResNet34: no tensor {key!r}")
        value = np.asarray(sd[key], dtype=np.float32)
        if shape is not None and value.shape != shape:
            raise _core.ModelError(f"{path}: tensor {key!r} has shape {value.shape}, not {shape}")
        return value

    def bn(name: str, c: int) -> dict[str, np.ndarray]:
        return {
            p: get(f"{name}.{p}", (c,)) for p in ("weight", "bias", "running_mean", "running_var")
        }

    out = {}
    out["conv1"], out["conv1.b"] = _fold(get("conv1.weight", (CHANNELS[0], 1, 3, 3)), bn("bn1", 32))
    for name, c_in, c_out, stride in _layer_names():
        for conv, c_from in (("conv1", c_in), ("conv2", c_out)):
            w = get(f"{name}.{conv}.weight", (c_out, c_from, 3, 3))
            out[f"{name}.{conv}"], out[f"{name}.{conv}.b"] = _fold(
                w, bn(f"{name}.{conv.replace('conv', 'bn')}", c_out)
            )
        if stride != 1 or c_in != c_out:
            w = get(f"{name}.shortcut.0.weight", (c_out, c_in, 1, 1))
            out[f"{name}.shortcut"], out[f"{name}.shortcut.b"] = _fold(
                w, bn(f"{name}.shortcut.1", c_out)
            )
    stats = 2 * CHANNELS[-1] * (FEAT_DIM // 8)
    out["seg_1.weight"] = get("seg_1.weight", (EMBED_DIM, stats))
    out["seg_1.bias"] = get("seg_1.bias", (EMBED_DIM,))
    return out


def load_resnet(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Folded weights from pyannote's pytorch_model.bin (read without torch)."""
    name = os.fspath(path)
    checkpoint = load_checkpoint(name)
    if isinstance(checkpoint, dict) and "state_dict" in checkpoint:
        checkpoint = checkpoint["state_dict"]
    return fold_state_dict(state_dict(checkpoint), name)


def weighted_stats(x: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """[B, F, T, C] -> [B, 2 * C * F]: per (channel, row) mean and standard
    deviation over time (weighted, unbiased), channel-major like WeSpeaker's
    flatten of [C, F]. The definition the core's pooling follows (the tests
    hold it to this)."""
    b, f, t, c = x.shape
    w = np.ones((b, t), np.float64) if weights is None else weights.astype(np.float64)
    v1 = w.sum(axis=1)  # [B]
    v2 = (w * w).sum(axis=1)
    xs = x.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):  # an empty mask gives NaN
        mean = np.einsum("bt,bftc->bcf", w, xs) / v1[:, None, None]
        dev = xs - mean.transpose(0, 2, 1)[:, :, None, :]
        var = np.einsum("bt,bftc->bcf", w, dev * dev) / (v1 - v2 / v1)[:, None, None]
        std = np.sqrt(var + STD_EPS)
    return np.concatenate([mean.reshape(b, -1), std.reshape(b, -1)], axis=1).astype(np.float32)


class ResNetEmbedding(RuntimeUser):
    """``model(waveforms [B, samples], masks [B, frames] or None) -> [B, 256]``."""

    dimension = EMBED_DIM
    sample_rate = SAMPLE_RATE
    threshold = (
        MERGE_DISTANCE_THRESHOLD  # saywho's GE2E value; pyannote 3.1 uses 0.7046 for the ResNet
    )

    def __init__(
        self,
        source: str | os.PathLike[str] | dict[str, np.ndarray],
        runtime: _core.Runtime | None = None,
        batch_size: int = 4,
    ) -> None:
        if batch_size < 1:
            raise _core.OptionError("batch_size must be at least 1")
        tensors = source if isinstance(source, dict) else load_resnet(source)
        self._use_runtime(runtime)
        with self._opening():  # a refused model leaves no Runtime open
            self._model = _core.ResNet34Model(self.runtime, tensors)
        self.batch_size = batch_size

    def _run(self, features: np.ndarray, masks: np.ndarray | None) -> np.ndarray:
        self._live()  # a ModelError once closed
        x = np.ascontiguousarray(features, dtype=np.float32)
        m = None if masks is None else np.ascontiguousarray(masks, dtype=np.float32)
        out = []
        for i in range(0, len(x), self.batch_size):
            rows = slice(i, i + self.batch_size)
            out.append(self._model.run(x[rows], None if m is None else m[rows]))
        return np.concatenate(out)

    def embed_features(self, features: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        """fbank [B, T, 80] and optional masks [B, frames] -> [B, 256]."""
        if masks is None:
            return self._run(features, None)
        return self._run(features, np.asarray(masks, dtype=np.float32)[:, None, :])[:, 0]

    def embed_speakers(self, waveforms: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Chunks [B, samples] and their local speakers' masks [B, S, frames]
        -> [B, S, 256]: the network runs once per chunk, the pooling once per
        speaker (the mask only weighs the pooling). NaN where a mask is empty."""
        w = waveform_batch(waveforms)
        features = np.stack([fbank(row, threads=self.runtime.threads) for row in w])
        return self._run(features, np.asarray(masks, dtype=np.float32))

    def __call__(self, waveforms: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        w = waveform_batch(waveforms)
        features = np.stack([fbank(row, threads=self.runtime.threads) for row in w])
        m = None if masks is None else np.asarray(masks, dtype=np.float32)
        out = self.embed_features(features, m)
        if m is not None:  # pyannote: no embedding where the mask keeps nothing
            out[~(m > 0).any(axis=1)] = np.nan
        return out
