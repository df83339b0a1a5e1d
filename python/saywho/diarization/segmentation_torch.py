"""segmentation-3.0 from pyannote's own checkpoint (pytorch_model.bin), without torch.

The checkpoint is read by saywho's restricted unpickler (pyannote's
Specifications, Problem, Resolution and TorchVersion become inert records).
Its state_dict names pyannote's PyanNet layers; two of them need work here:

- SincNet's first layer stores the parameters of 40 band-pass filters
  (asteroid's ParamSincFB: low cut-off and bandwidth in Hz, a half Hamming
  window, the time axis), not the filters. The 80 filters of 251 taps (a
  cosine and a sine band-pass per band, each normalised by twice its
  bandwidth) are computed from them, as the ONNX export froze them.
- the monolithic bidirectional LSTM keeps each direction apart
  (``weight_ih_l0``, ``weight_ih_l0_reverse``); the core wants them stacked
  with the two biases summed.
"""

from __future__ import annotations

import numpy as np

from .._internal.native import _core
from ..audio.decode import SAMPLE_RATE
from ..models.torch_checkpoint import load_checkpoint, state_dict

MIN_LOW_HZ = 50.0  # pyannote's SincNet: ParamSincFB(min_low_hz=50, min_band_hz=50)
MIN_BAND_HZ = 50.0
LSTM_LAYERS = 4


def sinc_filters(low_hz: np.ndarray, band_hz: np.ndarray, window: np.ndarray, n: np.ndarray):
    """[80, 1, 251] filters from ParamSincFB's parameters (float64 math)."""
    low = MIN_LOW_HZ + np.abs(low_hz.astype(np.float64))  # [40, 1]
    high = np.clip(
        low + MIN_BAND_HZ + np.abs(band_hz.astype(np.float64)), MIN_LOW_HZ, SAMPLE_RATE / 2
    )
    band = (high - low)[:, 0]
    n = n.astype(np.float64)  # [1, 125]: 2 pi t / sample rate for t < 0
    win = window.astype(np.float64)
    ft_low, ft_high = low @ n, high @ n
    cos_left = (np.sin(ft_high) - np.sin(ft_low)) / (n / 2) * win
    sin_left = (np.cos(ft_low) - np.cos(ft_high)) / (n / 2) * win
    cos_f = np.concatenate([cos_left, 2 * band[:, None], cos_left[:, ::-1]], axis=1)
    sin_f = np.concatenate([sin_left, np.zeros((len(band), 1)), -sin_left[:, ::-1]], axis=1)
    filters = np.concatenate([cos_f, sin_f], axis=0) / (2 * np.concatenate([band, band])[:, None])
    return filters[:, None, :].astype(np.float32)


def from_state_dict(sd: dict[str, np.ndarray], path: str) -> dict[str, np.ndarray]:
    """PyanNet's state_dict -> the core's named arrays (docs/segmentation.md)."""

    def get(key: str) -> np.ndarray:
        if key not in sd:
            raise _core.ModelError(f"{path}: not a pyannote segmentation checkpoint: no {key!r}")
        return np.asarray(sd[key], dtype=np.float32)

    fb = "sincnet.conv1d.0.filterbank."
    out = {
        "sincnet.conv1d.0.weight": sinc_filters(
            get(fb + "low_hz_"), get(fb + "band_hz_"), get(fb + "window_"), get(fb + "n_")
        )
    }
    for key in ("wav_norm1d", "norm1d.0", "norm1d.1", "norm1d.2"):
        for p in ("weight", "bias"):
            out[f"sincnet.{key}.{p}"] = get(f"sincnet.{key}.{p}")
    for i in (1, 2):
        for p in ("weight", "bias"):
            out[f"sincnet.conv1d.{i}.{p}"] = get(f"sincnet.conv1d.{i}.{p}")
    for i in range(LSTM_LAYERS):
        dirs = (f"l{i}", f"l{i}_reverse")
        out[f"lstm.{i}.weight_ih"] = np.stack([get(f"lstm.weight_ih_{d}") for d in dirs])
        out[f"lstm.{i}.weight_hh"] = np.stack([get(f"lstm.weight_hh_{d}") for d in dirs])
        out[f"lstm.{i}.bias"] = np.stack(
            [get(f"lstm.bias_ih_{d}") + get(f"lstm.bias_hh_{d}") for d in dirs]
        )
    for key in ("linear.0", "linear.1", "classifier"):
        for p in ("weight", "bias"):
            out[f"{key}.{p}"] = get(f"{key}.{p}")
    return {k: np.ascontiguousarray(v) for k, v in out.items()}


def load_pytorch_segmentation(path: str) -> dict[str, np.ndarray]:
    checkpoint = load_checkpoint(path)
    if isinstance(checkpoint, dict) and "state_dict" in checkpoint:
        checkpoint = checkpoint["state_dict"]
    return from_state_dict(state_dict(checkpoint), path)
