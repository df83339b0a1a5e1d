"""The same weights for whisper.cpp: a checkpoint saywho reads, written as a
whisper.cpp ggml model file, so the bench compares engines, not weights.

The file (whisper.cpp's own legacy "ggml" layout, as its loader reads it):
magic 0x67676d6c; eleven int32 hyper-parameters (n_vocab, n_audio_ctx,
n_audio_state, n_audio_head, n_audio_layer, n_text_ctx, n_text_state,
n_text_head, n_text_layer, n_mels, ftype = 1 for float16); the mel
filterbank (rows, columns, float32 values); the BPE vocabulary (count, then
length-prefixed bytes in rank order; whisper.cpp adds the special tokens
itself); then each tensor: n_dims, name length, type (0 float32, 1 float16),
the dimensions innermost first, the name, the data. Matrices go as float16,
vectors, convolution biases (as [n, 1]) and positional embeddings as float32.

    python3 bench/whispercpp_model.py tiny.en out.bin
"""

from __future__ import annotations

import base64
import struct
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "tests" / "data" / "shared" / "whisper_assets"
FLOAT32_NAMES = {
    "encoder.conv1.bias",
    "encoder.conv2.bias",
    "encoder.positional_embedding",
    "decoder.positional_embedding",
}
HPARAMS = (
    "n_vocab",
    "n_audio_ctx",
    "n_audio_state",
    "n_audio_head",
    "n_audio_layer",
    "n_text_ctx",
    "n_text_state",
    "n_text_head",
    "n_text_layer",
    "n_mels",
)


def _vocabulary(multilingual: bool) -> list[bytes]:
    path = ASSETS / ("multilingual.tiktoken" if multilingual else "gpt2.tiktoken")
    ranked = []
    for line in path.read_text().splitlines():
        if line:
            token, rank = line.split()
            ranked.append((int(rank), base64.b64decode(token)))
    return [token for _, token in sorted(ranked)]


def write_ggml(model_dir: str | Path, out: str | Path) -> Path:
    """Writes ``model_dir`` (any checkpoint saywho reads) as a ggml file."""
    from saywho.models.whisper_weights import load_whisper

    weights = load_whisper(model_dir)
    dims = dict(weights.dims if isinstance(weights.dims, dict) else vars(weights.dims))
    with np.load(ASSETS / "mel_filters.npz") as f:
        filters = f[f"mel_{dims['n_mels']}"].astype(np.float32)
    out = Path(out)
    partial = out.with_suffix(out.suffix + ".partial")
    with open(partial, "wb") as f:
        f.write(struct.pack("i", 0x67676D6C))
        f.write(struct.pack("11i", *(dims[k] for k in HPARAMS), 1))
        f.write(struct.pack("ii", *filters.shape))
        f.write(filters.tobytes())
        vocab = _vocabulary(bool(weights.is_multilingual))
        f.write(struct.pack("i", len(vocab)))
        for token in vocab:
            f.write(struct.pack("i", len(token)) + token)
        for name, array in weights.tensors.items():
            data = np.asarray(array)
            if name in ("encoder.conv1.bias", "encoder.conv2.bias"):
                data = data.reshape(-1, 1)
            as_f32 = data.ndim < 2 or name in FLOAT32_NAMES
            data = np.ascontiguousarray(data, dtype=np.float32 if as_f32 else np.float16)
            encoded = name.encode()
            f.write(struct.pack("iii", data.ndim, len(encoded), 0 if as_f32 else 1))
            f.write(struct.pack(f"{data.ndim}i", *reversed(data.shape)))
            f.write(encoded)
            f.write(data.tobytes())
    partial.replace(out)  # never a half-written model under the final name
    return out


if __name__ == "__main__":
    from checkout_weights import whisper_dir

    print(write_ggml(whisper_dir(sys.argv[1]), sys.argv[2]))
