"""CTranslate2 ``model.bin`` read with NumPy alone, without the ctranslate2 package.

The layout, as CTranslate2's ``ModelSpec._serialize`` writes it (little endian):

    u32 binary_version                              1 .. 6
    str spec name, u32 spec revision                version >= 2
    u32 variable count, then per variable:
        str name, u8 rank, u32 dims[rank]
        u8 dtype id, u32 byte count                 version >= 4
        u8 item size, u32 element count             version <= 3
        raw bytes
    u32 alias count, then (str alias, str target)   version >= 3

where ``str`` is a u16 length (counting a trailing NUL) and that many bytes.
Variables are views into a read-only memory map, so opening a large model
costs no copy; only bfloat16 (which NumPy lacks) is widened to float32.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from .._internal.native import _core

# The newest layout this reader knows; CTranslate2 4.x writes 6.
MAX_BINARY_VERSION = 6

# Type ids in the order of CTranslate2's DataType enum (include/ctranslate2/types.h).
_DTYPES = ("<f4", "i1", "<i2", "<i4", "<f2", "bfloat16")

# Versions <= 3 stored an item size instead of a type; CTranslate2 reads them
# back with this (lossy) rule, so float16 cannot occur in such files.
_ITEM_SIZE_DTYPES = {4: "<f4", 2: "<i2", 1: "i1"}

# CTranslate2's scale for int16 weights saved without one (ops::Quantize).
_DEFAULT_INT16_SCALE = np.float32(1000.0)


@dataclass
class CT2Model:
    """The variables of one ``model.bin``, named as CTranslate2 names them."""

    path: str
    binary_version: int
    spec: str  # "" for binary version 1, which did not record it
    revision: int
    variables: dict[str, np.ndarray] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    def _resolve(self, name: str) -> str:
        # CTranslate2 also aliases a target's quantization scale.
        if name in self.variables:
            return name
        if name in self.aliases:
            return self.aliases[name]
        base = name.removesuffix("_scale")
        if base != name and base in self.aliases:
            return self.aliases[base] + "_scale"
        return name

    def __contains__(self, name: str) -> bool:
        return self._resolve(name) in self.variables

    def get(self, name: str) -> np.ndarray:
        """The raw variable, through aliases (``decoder/projection`` is often one)."""
        key = self._resolve(name)
        if key not in self.variables:
            raise _core.ModelError(f"{self.path}: no variable '{name}' in this {self.spec} model")
        return self.variables[key]

    def dequantized(self, name: str) -> np.ndarray:
        """A float variable: float16/float32 as stored, int8/int16 weights scaled back.

        CTranslate2 quantizes with ``q = rint(w * scale)``, one float32 scale
        per output row for int8 (``127 / max|row|``; a conv weight counts as
        rows of its flattened kernel) and one scalar for int16. So
        ``w ~= q / scale``.
        """
        value = self.get(name)
        if value.dtype.kind == "f":
            return value
        if value.dtype not in (np.int8, np.int16) or value.ndim == 0:
            raise _core.ModelError(
                f"{self.path}: variable '{name}' is {value.dtype}, not a float or quantized weight"
            )
        scale_name = name + "_scale"
        if scale_name in self:
            scale = self.get(scale_name).astype(np.float32)
        elif value.dtype == np.int16:
            scale = _DEFAULT_INT16_SCALE
        else:
            raise _core.ModelError(f"{self.path}: int8 variable '{name}' has no '{scale_name}'")
        rows = value.reshape(value.shape[0], -1).astype(np.float32)
        if scale.ndim == 1:
            if scale.shape[0] != value.shape[0]:
                raise _core.ModelError(
                    f"{self.path}: '{scale_name}' has {scale.shape[0]} scales for "
                    f"{value.shape[0]} rows of '{name}'"
                )
            scale = scale[:, None]
        return (rows / scale).reshape(value.shape)


class _Cursor:
    """Bounds-checked reads from the mapped file; every failure names the file."""

    def __init__(self, path: str, buf: np.ndarray):
        self.path, self.buf, self.pos = path, buf, 0

    def fail(self, what: str) -> _core.ModelError:
        return _core.ModelError(f"{self.path}: not a valid CTranslate2 model.bin: {what}")

    def take(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0 or start + n > self.buf.size:
            raise self.fail(
                f"truncated: {what} needs {n} bytes at offset {start}, file has {self.buf.size}"
            )
        self.pos = start + n
        return start

    def unpack_all(self, fmt: str, what: str) -> tuple:
        start = self.take(struct.calcsize("<" + fmt), what)
        return struct.unpack_from("<" + fmt, self.buf, start)

    def unpack(self, fmt: str, what: str) -> int:
        return self.unpack_all(fmt, what)[0]

    def string(self, what: str) -> str:
        n = self.unpack("H", what)
        start = self.take(n, what)
        raw = self.buf[start : start + n].tobytes()
        try:
            return raw.split(b"\0", 1)[0].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} at offset {start} is not UTF-8") from None


def read_ct2(path: str | os.PathLike) -> CT2Model:
    """Read a ``model.bin`` (or the directory holding one)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "model.bin")
    try:
        buf = np.memmap(path, dtype=np.uint8, mode="r")
    except (OSError, ValueError) as e:  # ValueError: an empty file cannot be mapped
        raise _core.ModelError(f"{path}: cannot read CTranslate2 model: {e}") from None
    cur = _Cursor(path, buf)

    version = cur.unpack("I", "binary version")
    if not 1 <= version <= MAX_BINARY_VERSION:
        raise _core.ModelError(
            f"{path}: CTranslate2 binary version {version} is not supported "
            f"(saywho reads 1 to {MAX_BINARY_VERSION}; is this a model.bin?)"
        )
    spec, revision = "", 1
    if version >= 2:
        spec = cur.string("spec name")
        revision = cur.unpack("I", "spec revision")
    model = CT2Model(path, version, spec, revision)

    count = cur.unpack("I", "variable count")
    for i in range(count):
        name = cur.string(f"name of variable {i}")
        rank = cur.unpack("B", f"rank of '{name}'")
        shape = cur.unpack_all(f"{rank}I", f"shape of '{name}'")
        if version >= 4:
            type_id, nbytes = cur.unpack_all("BI", f"type of '{name}'")
            if type_id >= len(_DTYPES):
                raise cur.fail(f"variable '{name}' has unknown type id {type_id}")
            dtype = _DTYPES[type_id]
        else:
            item_size, n = cur.unpack_all("BI", f"type of '{name}'")
            if item_size not in _ITEM_SIZE_DTYPES:
                raise cur.fail(f"variable '{name}' has unknown item size {item_size}")
            dtype, nbytes = _ITEM_SIZE_DTYPES[item_size], n * item_size
        model.variables[name] = _view(cur, name, shape, dtype, nbytes)

    if version >= 3:
        for i in range(cur.unpack("I", "alias count")):
            alias = cur.string(f"alias {i}")
            model.aliases[alias] = cur.string(f"target of alias '{alias}'")
    if cur.pos != buf.size:
        raise cur.fail(f"{buf.size - cur.pos} unexpected bytes after the last record")
    return model


def _view(cur: _Cursor, name: str, shape: tuple, dtype: str, nbytes: int) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    itemsize = 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize
    if count * itemsize != nbytes:
        raise cur.fail(
            f"variable '{name}' of shape {list(shape)} and type {dtype} "
            f"should hold {count * itemsize} bytes, the file says {nbytes}"
        )
    start = cur.take(nbytes, f"data of '{name}'")
    if dtype == "bfloat16":
        # bfloat16 is the top half of a float32: shift it back into place.
        raw = np.ndarray(shape, "<u2", cur.buf, start)
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return np.ndarray(shape, dtype, cur.buf, start)
