"""The ONNX reader against the onnx package (a test-only peer) on real files.

Real models: Silero VAD v6 (always in tests/data/shared) and pyannote's
segmentation-3.0 when the repo's weight fetch has put it in .cache. A model
built here with onnx.helper covers what those two lack: every initializer
data type in raw and typed fields, and every attribute kind.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from saywho import _core
from saywho.models.onnx_reader import Graph, read_onnx

from .conftest import shared_file

SEGMENTATION = (
    Path(os.environ["SAYWHO_TEST_WEIGHTS"]) / "pyannote-segmentation-3.0" / "segmentation-3.0.onnx"
)


def peer_array(tensor: onnx.TensorProto) -> np.ndarray:
    array = numpy_helper.to_array(tensor)
    if tensor.data_type == TensorProto.BFLOAT16:
        return array.astype(np.float32)  # saywho widens bfloat16 to float32
    if tensor.data_type == TensorProto.STRING:
        return np.array([s if isinstance(s, bytes) else s.encode() for s in array.flat]).reshape(
            array.shape
        )
    return array


def assert_same_array(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    assert ours.shape == theirs.shape, what
    if theirs.dtype.kind in "SUO":
        assert [bytes(v) for v in ours.flat] == list(theirs.flat), what
        return
    assert ours.dtype == theirs.dtype, what
    np.testing.assert_array_equal(ours, theirs, err_msg=what)


def assert_same_graph(ours: Graph, theirs: onnx.GraphProto) -> None:
    assert ours.name == theirs.name
    assert ours.inputs == [v.name for v in theirs.input]
    assert ours.outputs == [v.name for v in theirs.output]
    assert list(ours.initializers) == [t.name for t in theirs.initializer]
    for tensor in theirs.initializer:
        assert_same_array(ours.initializers[tensor.name], peer_array(tensor), tensor.name)
    assert len(ours.nodes) == len(theirs.node)
    for node, peer in zip(ours.nodes, theirs.node):
        assert (node.op_type, node.name, node.domain) == (peer.op_type, peer.name, peer.domain)
        assert (node.inputs, node.outputs) == (list(peer.input), list(peer.output))
        assert list(node.attributes) == [a.name for a in peer.attribute]
        for attribute in peer.attribute:
            assert_same_attribute(node.attributes[attribute.name], attribute)


def assert_same_attribute(ours, attribute: onnx.AttributeProto) -> None:
    value = helper.get_attribute_value(attribute)
    kind = attribute.type
    if kind == onnx.AttributeProto.GRAPH:
        assert_same_graph(ours, value)
    elif kind == onnx.AttributeProto.GRAPHS:
        assert len(ours) == len(value)
        for graph, peer in zip(ours, value):
            assert_same_graph(graph, peer)
    elif kind == onnx.AttributeProto.TENSOR:
        assert_same_array(ours, peer_array(value), attribute.name)
    elif kind == onnx.AttributeProto.TENSORS:
        assert len(ours) == len(value)
        for array, peer in zip(ours, value):
            assert_same_array(array, peer_array(peer), attribute.name)
    else:
        assert ours == (list(value) if isinstance(value, (list, tuple)) else value), attribute.name


def assert_same_model(path: Path) -> None:
    ours = read_onnx(path)
    peer = onnx.load(str(path))
    assert ours.ir_version == peer.ir_version
    assert ours.opset == {o.domain: o.version for o in peer.opset_import}
    assert_same_graph(ours, peer.graph)


def test_silero_vad_matches_onnx():
    assert_same_model(shared_file("silero_vad_v6.onnx"))


def test_pyannote_segmentation_matches_onnx():
    if not SEGMENTATION.is_file():
        pytest.fail(f"{SEGMENTATION} is missing: run bash scripts/fetch_test_weights.sh")
    assert_same_model(SEGMENTATION)


def built_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    raw = [  # numpy_helper writes raw_data
        numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "raw_f32"),
        numpy_helper.from_array(np.array([-(2**62), 5, -1], dtype=np.int64), "raw_i64"),
        numpy_helper.from_array(np.array([1.5, -2.0], dtype=np.float16), "raw_f16"),
        numpy_helper.from_array(np.array([[True, False]]), "raw_bool"),
        numpy_helper.from_array(np.array(3.25, dtype=np.float64), "raw_scalar"),
        numpy_helper.from_array(np.zeros((0, 3), dtype=np.float32), "raw_empty"),
    ]
    typed_values = {  # make_tensor(raw=False) writes the typed repeated fields
        TensorProto.FLOAT: rng.standard_normal(6).astype(np.float32),
        TensorProto.DOUBLE: rng.standard_normal(6),
        TensorProto.INT64: np.array([-(2**63), 2**63 - 1, -7, 0, 1, 300]),
        TensorProto.INT32: np.array([-(2**31), 2**31 - 1, -1, 0, 1, 70000], dtype=np.int32),
        TensorProto.INT16: np.array([-32768, 32767, -1, 0, 1, 2], dtype=np.int16),
        TensorProto.INT8: np.array([-128, 127, -1, 0, 1, 2], dtype=np.int8),
        TensorProto.UINT8: np.array([0, 255, 1, 2, 3, 4], dtype=np.uint8),
        TensorProto.UINT16: np.array([0, 65535, 1, 2, 3, 4], dtype=np.uint16),
        TensorProto.UINT32: np.array([0, 2**32 - 1, 1, 2, 3, 4], dtype=np.uint32),
        TensorProto.UINT64: np.array([0, 2**64 - 1, 1, 2, 3, 4], dtype=np.uint64),
        TensorProto.BOOL: np.array([True, False, True, True, False, False]),
        TensorProto.FLOAT16: np.array([1, -2.5, 0.1, 65504, 0, -0.0], dtype=np.float16),
        TensorProto.BFLOAT16: np.array([1, -2.5, 0.5, 256, 0, -3], dtype=np.float32),
        TensorProto.COMPLEX64: np.array([1 + 2j, 3 - 1j, 0, 1j, -1, 2], dtype=np.complex64),
        TensorProto.COMPLEX128: np.array([1 + 2j, 3 - 1j, 0, 1j, -1, 2]),
    }
    typed = [
        helper.make_tensor(f"typed_{TensorProto.DataType.Name(k)}", k, [2, 3], v, raw=False)
        for k, v in typed_values.items()
    ]
    typed.append(helper.make_tensor("typed_string", TensorProto.STRING, [2], [b"a", b"bc"]))

    branch = helper.make_graph(
        [helper.make_node("Identity", ["k"], ["y"], name="inner")],
        "branch",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        initializer=[numpy_helper.from_array(np.array([7, 8], dtype=np.float32), "k")],
    )
    node = helper.make_node(
        "Custom",
        ["raw_f32", "", "typed_FLOAT"],
        ["out", "aux"],
        name="every_attribute",
        domain="test.saywho",
        f=0.1,
        i=-5,
        s=b"text",
        t=numpy_helper.from_array(np.arange(4, dtype=np.int32), "t"),
        g=branch,
        floats=[1.0, -0.5, 3.25],
        ints=[-1, 0, 2**40],
        strings=[b"a", b"b"],
        tensors=[typed[0], raw[1]],
        graphs=[branch, branch],
    )
    graph = helper.make_graph(
        [node, helper.make_node("Relu", ["out"], ["y"])],
        "built",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=raw + typed,
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("test.saywho", 3)],
    )


def test_built_model_with_every_dtype_and_attribute_matches_onnx(tmp_path):
    path = tmp_path / "built.onnx"
    onnx.save(built_model(), str(path))
    assert_same_model(path)
    model = read_onnx(path)
    assert model.opset == {"": 17, "test.saywho": 3}
    assert model.nodes[0].attributes["g"].initializers["k"].tolist() == [7.0, 8.0]
    assert model.initializers["typed_BFLOAT16"].dtype == np.float32


def test_truncated_and_corrupt_files_raise_model_error(tmp_path):
    data = shared_file("silero_vad_v6.onnx").read_bytes()
    path = tmp_path / "cut.onnx"
    for cut in (0, 1, 100, len(data) // 3, len(data) // 2, len(data) - 10, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(_core.ModelError, match=r"cut\.onnx"):
            read_onnx(path)
    rng = np.random.default_rng(0)
    for _ in range(20):
        path.write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
        with pytest.raises(_core.ModelError, match=r"cut\.onnx"):
            read_onnx(path)
    with pytest.raises(_core.ModelError, match="absent.onnx"):
        read_onnx(tmp_path / "absent.onnx")


def test_external_data_is_refused(tmp_path):
    model = built_model()
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    path = tmp_path / "external.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(_core.ModelError, match=r"external\.onnx.*external file"):
        read_onnx(path)


def test_wire_format_reads_packed_and_unpacked_repeats_alike():
    from saywho.models import protobuf as pb

    # Field 1 as three varint records (proto2's default) and as one packed
    # record; -1 is the ten-byte two's complement varint.
    minus_one = b"\xff" * 9 + b"\x01"
    unpacked = b"\x08\x05" + b"\x08\xac\x02" + b"\x08" + minus_one
    packed = b"\x0a" + bytes([2 + 1 + 1 + 10]) + b"\xac\x02" + b"\x05" + b"\x07" + minus_one
    assert pb.varints(pb.parse(memoryview(unpacked))[1], "f").view(np.int64).tolist() == [
        5,
        300,
        -1,
    ]
    assert pb.varints(pb.parse(memoryview(packed))[1], "f").view(np.int64).tolist() == [
        300,
        5,
        7,
        -1,
    ]
    with pytest.raises(_core.ModelError):
        pb.parse(memoryview(b"\x0a\x05ab"))  # length past the end
    with pytest.raises(_core.ModelError):
        pb.varints(pb.parse(memoryview(b"\x0a\x01\x80"))[1], "f")  # packed varint cut
