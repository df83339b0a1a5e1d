"""Hugging Face safetensors read with NumPy alone.

A file is a u64 (little endian) header length, that many bytes of JSON
naming each tensor's dtype, shape and [begin, end) byte range counted from
the end of the header, then the raw data. Tensors are views into a read-only
memory map; only bfloat16 (which NumPy lacks) is widened to float32.
"""

from __future__ import annotations

import json
import os

import numpy as np

from .._internal.native import _core

_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "bfloat16",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}

# A header this large is a corrupt length, not a real file (the format caps it at 100 MB).
_MAX_HEADER = 100_000_000


def read_safetensors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every tensor of one ``.safetensors`` file, by name."""
    path = os.fspath(path)
    try:
        buf = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as e:
        raise _core.ModelError(f"{path}: cannot read safetensors file: {e}") from None

    def bad(what: str) -> _core.ModelError:
        return _core.ModelError(f"{path}: not a valid safetensors file: {what}")

    if buf.size < 8:
        raise bad(f"{buf.size} bytes is shorter than the 8-byte header length")
    n = int(buf[:8].view("<u8")[0])
    if n > min(_MAX_HEADER, buf.size - 8):
        raise bad(f"header length {n} does not fit in a file of {buf.size} bytes")
    try:
        header = json.loads(buf[8 : 8 + n].tobytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad("header is not a JSON object")

    data_start = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (begin, end) = _DTYPES[info["dtype"]], info["shape"], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise bad(f"entry '{name}' is malformed or has an unknown dtype: {info}") from None
        itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
        count = int(np.prod(shape, dtype=np.int64))
        if end - begin != count * itemsize or begin < 0:
            raise bad(f"tensor '{name}' of shape {shape} spans bytes [{begin}, {end})")
        if data_start + end > buf.size:
            raise bad(
                f"truncated: tensor '{name}' ends at byte {data_start + end}, file has {buf.size}"
            )
        if dtype == "bfloat16":
            raw = np.ndarray(shape, "<u2", buf, data_start + begin)
            tensors[name] = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            tensors[name] = np.ndarray(shape, dtype, buf, data_start + begin)
    return tensors


def read_safetensors_dir(directory: str | os.PathLike) -> dict[str, np.ndarray]:
    """All tensors of a model directory: ``model.safetensors`` or the shards its index names."""
    directory = os.fspath(directory)
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f).get("weight_map", {}).values()))
        tensors = {}
        for shard in shards:
            tensors.update(read_safetensors(os.path.join(directory, shard)))
        return tensors
    return read_safetensors(os.path.join(directory, "model.safetensors"))
