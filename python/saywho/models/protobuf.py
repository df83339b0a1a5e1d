"""Just enough of protobuf's wire format to read model files without protobuf.

A message is a sequence of (field number, wire type, value) records; which
field means what is the schema's business (see ``onnx_reader``). Every read
is bounds-checked, so a truncated or corrupt file raises ``ModelError``
instead of yielding garbage.
"""

from __future__ import annotations

import struct
from collections import defaultdict

import numpy as np

from .._internal.native import _core

VARINT, I64, LEN, I32 = 0, 1, 2, 5


def read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` (cut to 64 bits) and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise _core.ModelError("data ends inside a varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise _core.ModelError("varint longer than 10 bytes")


def parse(buf: memoryview) -> dict[int, list[tuple[int, object]]]:
    """Records of one message, grouped by field number, in order.

    Values: ``int`` for varints, ``memoryview`` for the rest (8 or 4 bytes
    for fixed fields), so sub-messages and raw tensor bytes are not copied.
    """
    fields: dict[int, list[tuple[int, object]]] = defaultdict(list)
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _core.ModelError("field number 0 (corrupt data)")
        if wire == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire in (I64, I32, LEN):
            if wire == LEN:
                size, pos = read_varint(buf, pos)
            else:
                size = 8 if wire == I64 else 4
            if pos + size > end:
                raise _core.ModelError(f"field {number} runs {pos + size - end} bytes past the end")
            value, pos = buf[pos : pos + size], pos + size
        else:
            # Groups (3, 4) are deprecated and absent from the schemas read here.
            raise _core.ModelError(f"field {number} has unsupported wire type {wire}")
        fields[number].append((wire, value))
    return fields


def expect(records: list[tuple[int, object]], wire: int, what: str) -> list:
    """Values of records that must all have wire type ``wire``."""
    for got, _ in records:
        if got != wire:
            raise _core.ModelError(f"{what} has wire type {got}, expected {wire}")
    return [value for _, value in records]


def string(records: list[tuple[int, object]], what: str, default: str = "") -> str:
    """The last value of a string field (protobuf's rule for repeats)."""
    values = expect(records, LEN, what)
    if not values:
        return default
    try:
        return bytes(values[-1]).decode("utf-8")
    except UnicodeDecodeError:
        raise _core.ModelError(f"{what} is not UTF-8") from None


def strings(records: list[tuple[int, object]], what: str) -> list[str]:
    return [string([r], what) for r in records]


def integer(records: list[tuple[int, object]], what: str, default: int = 0) -> int:
    """The last value of an int64/int32 field, signed."""
    values = expect(records, VARINT, what)
    return _signed(values[-1]) if values else default


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def floats32(records: list[tuple[int, object]], what: str) -> np.ndarray:
    """A repeated float field, packed or not."""
    return _fixed(records, I32, "<f4", what)


def floats64(records: list[tuple[int, object]], what: str) -> np.ndarray:
    return _fixed(records, I64, "<f8", what)


def _fixed(records, wire: int, dtype: str, what: str) -> np.ndarray:
    chunks = []
    for got, value in records:
        if got not in (wire, LEN):
            raise _core.ModelError(f"{what} has wire type {got}")
        if len(value) % np.dtype(dtype).itemsize:
            raise _core.ModelError(f"{what}: packed length {len(value)} is not whole values")
        chunks.append(np.frombuffer(value, dtype=dtype))
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype)


def varints(records: list[tuple[int, object]], what: str) -> np.ndarray:
    """A repeated varint field, packed or not, as uint64 (two's complement)."""
    chunks = []
    for got, value in records:
        if got == VARINT:
            chunks.append(np.array([value], dtype=np.uint64))
        elif got == LEN:
            chunks.append(_packed_varints(np.frombuffer(value, dtype=np.uint8), what))
        else:
            raise _core.ModelError(f"{what} has wire type {got}")
    return np.concatenate(chunks) if chunks else np.zeros(0, np.uint64)


def _packed_varints(data: np.ndarray, what: str) -> np.ndarray:
    # Vectorised: a value ends at each byte below 0x80; its bytes carry 7 bits
    # each, least significant first. Large int64 tensors stay fast this way.
    if data.size == 0:
        return np.zeros(0, np.uint64)
    ends = np.flatnonzero(data < 0x80)
    if ends.size == 0 or ends[-1] != data.size - 1:
        raise _core.ModelError(f"{what}: packed data ends inside a varint")
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 10:
        raise _core.ModelError(f"{what}: varint longer than 10 bytes")
    position = np.arange(data.size) - np.repeat(starts, lengths)
    parts = (data & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    # The 7-bit groups do not overlap, so a sum is their bitwise or.
    return np.add.reduceat(parts, starts)


def float32(records: list[tuple[int, object]], what: str, default: float = 0.0) -> float:
    values = expect(records, I32, what)
    return struct.unpack("<f", values[-1])[0] if values else default
