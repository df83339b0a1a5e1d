"""A CTranslate2 Whisper model.bin with large-v3's tensor shapes and random
float16 values, for timing the load path at the size users load (no
large-v3 weights are available here). Its numbers mean nothing: never
transcribe with it.

The variable list is a real checkpoint's (multilingual base, the test
weights): the same names, types, scalars and alias, every width scaled to
large-v3's (512 -> 1280 model width, 80 -> 128 mel bins, 8 -> 20 heads),
its six layers repeated to 32. The vocabulary stays base's 51865 entries
(large-v3 has 51866) so that its tokenizer.json and vocabulary.txt, copied
beside it, match the embedding rows for CTranslate2 as well as saywho.
Written once into an ignored cache folder, keyed by the template's size.

    python3 bench/synthetic_whisper.py [OUT_DIR]
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

LAYERS = 32
# base's widths -> large-v3's; lengths (1500 frames, 448 tokens, kernel 3) stay
WIDTHS = {512: 1280, 1024: 2560, 1536: 3840, 2048: 5120, 80: 128}
HEADS = 20
_TYPE_IDS = {np.dtype("<f4"): 0, np.dtype("i1"): 1, np.dtype("<i2"): 2, np.dtype("<i4"): 3,
             np.dtype("<f2"): 4}  # fmt: skip


def default_dir() -> Path:
    return REPO / ".cache" / "synthetic-whisper-large-v3"


def _string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _variables(template) -> list:
    """(name, shape, dtype, scalar value or None) in the template's order, layers repeated."""
    out = []
    for name, value in template.variables.items():
        parts = name.split("/")
        if len(parts) > 1 and re.fullmatch(r"layer_\d+", parts[1]):
            if parts[1] != "layer_0":
                continue
            names = [f"{parts[0]}/layer_{i}/" + "/".join(parts[2:]) for i in range(LAYERS)]
        else:
            names = [name]
        shape = tuple(WIDTHS.get(int(d), int(d)) for d in value.shape)
        scalar = None
        if value.ndim == 0:
            scalar = HEADS if name.endswith("num_heads") else value.item()
        out += [(n, shape, value.dtype, scalar) for n in names]
    return sorted(out)  # CTranslate2 writes its variables sorted by name


def _zero_key_bias(name: str, bits: np.ndarray) -> None:
    # Whisper's key projections have no bias: the fused biases hold zeros there
    if name.endswith("self_attention/linear_0/bias"):
        bits[bits.size // 3 : 2 * bits.size // 3] = 0
    elif name.endswith("/attention/linear_1/bias"):
        bits[: bits.size // 2] = 0


def write_synthetic(out: Path | None = None, seed: int = 0) -> Path:
    """The model directory (model.bin, config.json, tokenizer.json, vocabulary.txt)."""
    from checkout_weights import whisper_dir

    from saywho.models.ctranslate2 import read_ct2

    src = whisper_dir("base")
    out = Path(out or default_dir())
    stamp = out / f"complete-v3-{os.path.getsize(src / 'model.bin')}"
    if stamp.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    template = read_ct2(src)
    rng = np.random.default_rng(seed)
    tmp = out / "model.bin.part"
    with open(tmp, "wb") as f:
        f.write(
            struct.pack("<I", 6) + _string("WhisperSpec") + struct.pack("<I", template.revision)
        )
        variables = _variables(template)
        f.write(struct.pack("<I", len(variables)))
        for name, shape, dtype, scalar in variables:
            f.write(_string(name) + struct.pack("<B", len(shape)))
            f.write(struct.pack(f"<{len(shape)}I", *shape))
            count = int(np.prod(shape, dtype=np.int64))
            f.write(struct.pack("<BI", _TYPE_IDS[dtype], count * dtype.itemsize))
            if scalar is not None:
                f.write(np.array(scalar, dtype).tobytes())
                continue
            # finite halves of magnitude < 2, written in slices to keep memory flat
            for start in range(0, count, 1 << 26):
                n = min(1 << 26, count - start)
                bits = rng.integers(0, 1 << 16, n, dtype=np.uint16) & np.uint16(0xBFFF)
                _zero_key_bias(name, bits)
                f.write(bits.tobytes())
        f.write(struct.pack("<I", len(template.aliases)))
        for alias, target in template.aliases.items():
            f.write(_string(alias) + _string(target))
    os.replace(tmp, out / "model.bin")
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(src / name, out / name)
    stamp.touch()
    return out


if __name__ == "__main__":
    print(write_synthetic(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
