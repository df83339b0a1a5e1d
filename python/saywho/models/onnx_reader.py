"""ONNX model files read without the onnx package: weights, nodes, names.

saywho runs the networks itself, so from an ONNX file it needs only the
initializers (named weights) and the node list that says how they connect.
Field numbers are those of onnx/onnx.proto; fields not listed are skipped.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

import numpy as np

from .._internal.native import _core
from . import protobuf as pb

# TensorProto.DataType -> NumPy dtype of its little-endian raw_data.
_DTYPES = {
    1: "<f4",  # FLOAT
    2: "u1",  # UINT8
    3: "i1",  # INT8
    4: "<u2",  # UINT16
    5: "<i2",  # INT16
    6: "<i4",  # INT32
    7: "<i8",  # INT64
    9: "?",  # BOOL
    10: "<f2",  # FLOAT16
    11: "<f8",  # DOUBLE
    12: "<u4",  # UINT32
    13: "<u8",  # UINT64
    14: "<c8",  # COMPLEX64
    15: "<c16",  # COMPLEX128
    16: "<u2",  # BFLOAT16: widened to float32 below, NumPy has no bfloat16
}
_STRING, _BFLOAT16 = 8, 16

# AttributeProto.AttributeType values, and the field each one uses.
_FLOAT, _INT, _STR, _TENSOR, _GRAPH = 1, 2, 3, 4, 5
_FLOATS, _INTS, _STRS, _TENSORS, _GRAPHS = 6, 7, 8, 9, 10
_ATTRIBUTE_FIELDS = {
    _FLOAT: 2,
    _INT: 3,
    _STR: 4,
    _TENSOR: 5,
    _GRAPH: 6,
    _FLOATS: 7,
    _INTS: 8,
    _STRS: 9,
    _TENSORS: 10,
    _GRAPHS: 11,
}


@dataclass
class Node:
    op_type: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, object]
    domain: str = ""


@dataclass
class Graph:
    """A GraphProto: the main graph, or a subgraph of an If/Loop/Scan node."""

    name: str
    nodes: list[Node]
    initializers: dict[str, np.ndarray]
    inputs: list[str]
    outputs: list[str]


@dataclass
class OnnxModel(Graph):
    """The main graph, plus the operator set versions (domain -> version)."""

    opset: dict[str, int] = field(default_factory=dict)
    ir_version: int = 0


def read_onnx(path: str | os.PathLike[str]) -> OnnxModel:
    """Reads an ONNX file; a corrupt or truncated one raises ``ModelError``."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise _core.ModelError(f"{name}: cannot read ONNX model: {e.strerror or e}") from None
    try:
        return _model(memoryview(data))
    except _core.ModelError as e:
        raise _core.ModelError(f"{name}: corrupt or truncated ONNX model: {e}") from None
    except (ValueError, TypeError, OverflowError, struct.error) as e:
        raise _core.ModelError(f"{name}: corrupt or truncated ONNX model: {e}") from None


def _model(buf: memoryview) -> OnnxModel:
    fields = pb.parse(buf)
    graphs = pb.expect(fields[7], pb.LEN, "ModelProto.graph")
    # An ONNX file has no end marker: a file cut at a field boundary still
    # parses, so missing required parts are what reveal the cut.
    if not graphs:
        raise _core.ModelError("no graph")
    opset = {}
    for entry in pb.expect(fields[8], pb.LEN, "ModelProto.opset_import"):
        f = pb.parse(entry)
        opset[pb.string(f[1], "OperatorSetIdProto.domain")] = pb.integer(
            f[2], "OperatorSetIdProto.version"
        )
    if not opset:
        raise _core.ModelError("no opset_import")
    graph = _graph(graphs[-1])
    if not graph.nodes:
        raise _core.ModelError("graph has no nodes")
    return OnnxModel(
        **vars(graph), opset=opset, ir_version=pb.integer(fields[1], "ModelProto.ir_version")
    )


def _graph(buf: memoryview) -> Graph:
    f = pb.parse(buf)
    if f[15]:
        raise _core.ModelError("sparse initializers are not supported")
    initializers = {}
    for entry in pb.expect(f[5], pb.LEN, "GraphProto.initializer"):
        name, array = _tensor(entry)
        initializers[name] = array
    return Graph(
        name=pb.string(f[2], "GraphProto.name"),
        nodes=[_node(n) for n in pb.expect(f[1], pb.LEN, "GraphProto.node")],
        initializers=initializers,
        inputs=[_value_name(v) for v in pb.expect(f[11], pb.LEN, "GraphProto.input")],
        outputs=[_value_name(v) for v in pb.expect(f[12], pb.LEN, "GraphProto.output")],
    )


def _value_name(buf: memoryview) -> str:
    return pb.string(pb.parse(buf)[1], "ValueInfoProto.name")


def _node(buf: memoryview) -> Node:
    f = pb.parse(buf)
    attributes = dict(_attribute(a) for a in pb.expect(f[5], pb.LEN, "NodeProto.attribute"))
    return Node(
        op_type=pb.string(f[4], "NodeProto.op_type"),
        name=pb.string(f[3], "NodeProto.name"),
        inputs=pb.strings(f[1], "NodeProto.input"),
        outputs=pb.strings(f[2], "NodeProto.output"),
        attributes=attributes,
        domain=pb.string(f[7], "NodeProto.domain"),
    )


def _attribute(buf: memoryview) -> tuple[str, object]:
    f = pb.parse(buf)
    name = pb.string(f[1], "AttributeProto.name")
    what = f"attribute {name!r}"
    kind = pb.integer(f[20], f"{what} type")
    if kind == 0:
        # Files from before the type field: the one field present says it.
        present = [k for k, number in _ATTRIBUTE_FIELDS.items() if f[number]]
        kind = present[0] if len(present) == 1 else 0
    records = f[_ATTRIBUTE_FIELDS.get(kind, 0)]
    if kind == _FLOAT:
        return name, pb.float32(records, what)
    if kind == _INT:
        return name, pb.integer(records, what)
    if kind == _STR:
        return name, bytes(pb.expect(records, pb.LEN, what)[-1]) if records else b""
    if kind == _TENSOR:
        return name, _tensor(pb.expect(records, pb.LEN, what)[-1])[1]
    if kind == _GRAPH:
        return name, _graph(pb.expect(records, pb.LEN, what)[-1])
    if kind == _FLOATS:
        return name, [float(v) for v in pb.floats32(records, what)]
    if kind == _INTS:
        return name, [int(v) for v in pb.varints(records, what).view(np.int64)]
    if kind == _STRS:
        return name, [bytes(v) for v in pb.expect(records, pb.LEN, what)]
    if kind == _TENSORS:
        return name, [_tensor(t)[1] for t in pb.expect(records, pb.LEN, what)]
    if kind == _GRAPHS:
        return name, [_graph(g) for g in pb.expect(records, pb.LEN, what)]
    raise _core.ModelError(f"{what} has unsupported type {kind}")


def _tensor(buf: memoryview) -> tuple[str, np.ndarray]:
    f = pb.parse(buf)
    name = pb.string(f[8], "TensorProto.name")
    what = f"tensor {name!r}"
    if f[13] or pb.integer(f[14], f"{what} data_location") == 1:
        raise _core.ModelError(f"{what} keeps its data in an external file, not supported")
    if f[3]:
        raise _core.ModelError(f"{what} is segmented, not supported")
    dims = [int(d) for d in pb.varints(f[1], f"{what} dims").view(np.int64)]
    if any(d < 0 for d in dims):
        raise _core.ModelError(f"{what} has negative dims {dims}")
    kind = pb.integer(f[2], f"{what} data_type")
    count = int(np.prod(dims, dtype=np.int64))
    if kind == _STRING:
        values = [bytes(v) for v in pb.expect(f[6], pb.LEN, what)]
        return name, _shaped(np.array(values, dtype=object), dims, count, what)
    if kind not in _DTYPES:
        raise _core.ModelError(f"{what} has unsupported data type {kind}")
    dtype = np.dtype(_DTYPES[kind])
    raw = pb.expect(f[9], pb.LEN, f"{what} raw_data")
    if raw:
        if len(raw[-1]) != count * dtype.itemsize:
            raise _core.ModelError(
                f"{what}: raw_data has {len(raw[-1])} bytes, shape {dims} needs "
                f"{count * dtype.itemsize}"
            )
        array = np.frombuffer(raw[-1], dtype=dtype)
    else:
        array = _typed_field(f, kind, dtype, what)
    array = _shaped(array, dims, count, what).astype(dtype.newbyteorder("="))
    if kind == _BFLOAT16:
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return name, array


def _typed_field(f, kind: int, dtype: np.dtype, what: str) -> np.ndarray:
    """Values kept in the typed repeated fields instead of raw_data."""
    if kind == 1:
        return pb.floats32(f[4], what)
    if kind == 14:
        return pb.floats32(f[4], what).view(np.complex64)
    if kind == 11:
        return pb.floats64(f[10], what)
    if kind == 15:
        return pb.floats64(f[10], what).view(np.complex128)
    if kind == 7:
        return pb.varints(f[7], what).view(np.int64)
    if kind in (12, 13):
        return pb.varints(f[11], what).astype(dtype)
    # int32_data holds every narrower type, float16 and bfloat16 as bit
    # patterns; the truncating cast recovers them.
    values = pb.varints(f[5], what).view(np.int64)
    if kind in (10, 16):
        return values.astype(np.uint16).view(dtype)
    return values.astype(dtype)


def _shaped(array: np.ndarray, dims: list[int], count: int, what: str) -> np.ndarray:
    if array.size != count:
        raise _core.ModelError(f"{what} has {array.size} values, shape {dims} needs {count}")
    return array.reshape(dims)
