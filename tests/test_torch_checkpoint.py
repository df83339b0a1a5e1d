"""PyTorch checkpoints without torch: real-format files, and hostile ones.

The files are written here the way ``torch.save`` writes them: a protocol 2
pickle naming ``torch._utils._rebuild_tensor_v2`` and ``torch.<X>Storage``
(through stand-in modules registered only while pickling) with storages in a
zip archive or appended after the pickle (legacy format). torch itself is not
needed.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import io
import os
import pickle
import struct
import subprocess
import sys
import types
import zipfile

import numpy as np
import pytest

from saywho import _core
from saywho.models.torch_checkpoint import load_checkpoint, state_dict

STORAGE_NAMES = {
    np.dtype("f4"): "FloatStorage",
    np.dtype("f2"): "HalfStorage",
    np.dtype("f8"): "DoubleStorage",
    np.dtype("i8"): "LongStorage",
    np.dtype("i4"): "IntStorage",
    np.dtype("i2"): "ShortStorage",
    np.dtype("i1"): "CharStorage",
    np.dtype("u1"): "ByteStorage",
    np.dtype("?"): "BoolStorage",
}


class Storage:
    def __init__(self, key: str, data: np.ndarray, type_name: str):
        self.key, self.data, self.type_name = key, data, type_name


class Tensor:
    """Reduces the way torch.Tensor does: _rebuild_tensor_v2(storage, ...)."""

    def __init__(self, fake, storage, offset, size, stride, with_metadata=False):
        self.fake, self.storage = fake, storage
        self.offset, self.size, self.stride = offset, size, stride
        self.with_metadata = with_metadata

    def __reduce__(self):
        args = (self.storage, self.offset, self.size, self.stride, False, collections.OrderedDict())
        if self.with_metadata:
            args += ({},)
        return self.fake._utils._rebuild_tensor_v2, args


class Parameter:
    def __init__(self, fake, tensor):
        self.fake, self.tensor = fake, tensor

    def __reduce__(self):
        return self.fake._utils._rebuild_parameter, (self.tensor, True, collections.OrderedDict())


@pytest.fixture
def fake_torch(monkeypatch):
    """A module tree named like torch's, so pickle writes torch's GLOBALs."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")
    torch._utils = utils
    for name in ("_rebuild_tensor_v2", "_rebuild_parameter"):

        def never_called(*args):
            raise AssertionError("writer-side stand-in must not run")

        never_called.__module__, never_called.__qualname__ = "torch._utils", name
        never_called.__name__ = name
        setattr(utils, name, never_called)
    for name in [*STORAGE_NAMES.values(), "BFloat16Storage"]:
        setattr(torch, name, type(name, (), {"__module__": "torch"}))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch


class Writer:
    """Builds tensors over storages and writes them as torch.save would."""

    def __init__(self, fake):
        self.fake, self.storages = fake, []

    def storage(self, data: np.ndarray, type_name: str | None = None) -> Storage:
        data = np.ascontiguousarray(data).reshape(-1)
        s = Storage(str(len(self.storages)), data, type_name or STORAGE_NAMES[data.dtype])
        self.storages.append(s)
        return s

    def tensor(self, array: np.ndarray, **kw) -> Tensor:
        array = np.array(array, order="C")  # ascontiguousarray would make 0-d 1-d
        strides = tuple(s // array.itemsize for s in array.strides)
        return Tensor(self.fake, self.storage(array), 0, array.shape, strides, **kw)

    def _pickle(self, obj, legacy: bool) -> bytes:
        fake = self.fake
        out = io.BytesIO()
        pickler = pickle.Pickler(out, protocol=2)

        def persistent_id(o):
            if isinstance(o, Storage):
                pid = ("storage", getattr(fake, o.type_name), o.key, "cpu", o.data.size)
                return pid + (None,) if legacy else pid
            return None

        pickler.persistent_id = persistent_id
        pickler.dump(obj)
        return out.getvalue()

    def zip(self, obj, path, prefix="archive") -> None:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            z.writestr(f"{prefix}/data.pkl", self._pickle(obj, legacy=False))
            z.writestr(f"{prefix}/byteorder", "little")
            for s in self.storages:
                z.writestr(
                    f"{prefix}/data/{s.key}",
                    s.data.astype(s.data.dtype.newbyteorder("<")).tobytes(),
                )
            z.writestr(f"{prefix}/version", "3\n")

    def legacy(self, obj, path) -> None:
        with open(path, "wb") as f:
            for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
                pickle.dump(header, f, protocol=2)
            f.write(self._pickle(obj, legacy=True))
            pickle.dump([s.key for s in self.storages], f, protocol=2)
            for s in self.storages:
                f.write(
                    struct.pack("<q", s.data.size)
                    + s.data.astype(s.data.dtype.newbyteorder("<")).tobytes()
                )


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "conv.weight": rng.standard_normal((4, 3, 5)).astype(np.float32),
        "conv.bias": rng.standard_normal(4).astype(np.float16),
        "lstm.weight": rng.standard_normal((8, 2)),
        "bn.num_batches_tracked": np.array(7, dtype=np.int64),
        "table": rng.integers(-100, 100, (3, 3)).astype(np.int32),
        "short": np.array([-2, 3], dtype=np.int16),
        "char": np.array([-5, 6], dtype=np.int8),
        "byte": np.array([250, 1], dtype=np.uint8),
        "mask": np.array([True, False, True]),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_reads_what_it_was_given(fake_torch, tmp_path, fmt):
    w = Writer(fake_torch)
    arrays = sample_arrays()
    weights = collections.OrderedDict((k, w.tensor(v)) for k, v in arrays.items())
    weights["conv.weight"] = Parameter(fake_torch, weights["conv.weight"])
    checkpoint = {"state_dict": weights, "epoch": 3, "names": ["a", "b"], "lr": (0.1, None)}
    path = tmp_path / "model.pt"
    getattr(w, fmt)(checkpoint, path)

    loaded = load_checkpoint(path)
    assert loaded["epoch"] == 3 and loaded["names"] == ["a", "b"] and loaded["lr"] == (0.1, None)
    got = state_dict(loaded)
    assert list(got) == list(arrays)
    for name, want in arrays.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want)


def test_offsets_strides_shared_storages_and_metadata_argument(fake_torch, tmp_path):
    w = Writer(fake_torch)
    base = np.arange(24, dtype=np.float32)
    storage = w.storage(base)
    # A transposed (4, 3) view starting at element 2, and a plain slice of
    # the same storage, as torch saves views that share memory.
    transposed = Tensor(fake_torch, storage, 2, (4, 3), (1, 4))
    tail = Tensor(fake_torch, storage, 20, (4,), (1,), with_metadata=True)
    bf16 = w.storage(np.array([0x3F80, 0xC000], dtype=np.uint16), "BFloat16Storage")
    halfs = Tensor(fake_torch, bf16, 0, (2,), (1,))
    w.zip({"t": transposed, "tail": tail, "bf16": halfs}, tmp_path / "m.pt", prefix="m")

    got = load_checkpoint(tmp_path / "m.pt")
    np.testing.assert_array_equal(got["t"], base[2:14].reshape(3, 4).T)
    assert got["t"].flags.c_contiguous and got["t"].flags.writeable
    np.testing.assert_array_equal(got["tail"], base[20:])
    # bfloat16 0x3F80 is 1.0 and 0xC000 is -2.0: widened to float32.
    np.testing.assert_array_equal(got["bf16"], np.array([1.0, -2.0], dtype=np.float32))


def test_layout_past_the_storage_end_is_refused(fake_torch, tmp_path):
    w = Writer(fake_torch)
    storage = w.storage(np.zeros(4, dtype=np.float32))
    w.zip({"t": Tensor(fake_torch, storage, 0, (1000, 1000), (1000, 1))}, tmp_path / "m.pt")
    with pytest.raises(_core.ModelError, match="m.pt.*storage"):
        load_checkpoint(tmp_path / "m.pt")


def test_pyannote_metadata_loads_as_inert_records(monkeypatch, tmp_path):
    # pyannote's checkpoints carry its task classes and torch's TorchVersion
    # beside the weights; stand-in modules let pickle write those GLOBALs.
    task = types.ModuleType("pyannote.audio.core.task")
    version = types.ModuleType("torch.torch_version")

    class Problem(enum.Enum):
        MONO_LABEL_CLASSIFICATION = 1

    @dataclasses.dataclass
    class Specifications:
        problem: Problem
        duration: float

    class TorchVersion(str):
        pass

    for cls, module in ((Problem, task), (Specifications, task), (TorchVersion, version)):
        cls.__module__, cls.__qualname__ = module.__name__, cls.__name__
        setattr(module, cls.__name__, cls)
        monkeypatch.setitem(sys.modules, module.__name__, module)
    for parent in ("torch", "pyannote", "pyannote.audio", "pyannote.audio.core"):
        monkeypatch.setitem(sys.modules, parent, types.ModuleType(parent))
    checkpoint = {
        "pyannote.audio": {
            "versions": {"torch": TorchVersion("2.1.0")},
            "specifications": Specifications(Problem.MONO_LABEL_CLASSIFICATION, 10.0),
        },
        "state_dict": collections.OrderedDict(),
    }
    path = tmp_path / "pyannote.ckpt"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("pyannote/data.pkl", pickle.dumps(checkpoint, protocol=2))
    monkeypatch.undo()  # the reader must not need those modules

    got = load_checkpoint(path)
    assert got["pyannote.audio"]["versions"]["torch"] == "2.1.0"
    spec = got["pyannote.audio"]["specifications"]
    assert spec.state["duration"] == 10.0
    assert spec.state["problem"].args == (1,)
    assert got["state_dict"] == {}


class Evil:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


MARKER = f"/tmp/pwned_saywho_{os.getpid()}"

EVIL = {
    "os.system": lambda: pickle.dumps(Evil(os.system, f"touch {MARKER}"), protocol=2),
    "builtins.exec": lambda: pickle.dumps(Evil(exec, f"open({MARKER!r}, 'w').close()"), protocol=4),
    "subprocess.call": lambda: pickle.dumps(Evil(subprocess.call, ["touch", MARKER]), protocol=0),
    # INST opcode: builds an instance of an arbitrary class by name.
    "inst": lambda: b"(S'touch " + MARKER.encode() + b"'\nios\nsystem\n.",
    # __setstate__ of an allowed class must not be a way in either.
    "nested": lambda: pickle.dumps({"state_dict": {"w": Evil(eval, "1")}}, protocol=2),
}


@pytest.mark.parametrize("fmt", ["zip", "legacy", "pickle"])
@pytest.mark.parametrize("attack", list(EVIL))
def test_malicious_checkpoint_runs_nothing(tmp_path, fmt, attack):
    if os.path.exists(MARKER):
        os.unlink(MARKER)
    payload = EVIL[attack]()
    path = tmp_path / "evil.pt"
    if fmt == "zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", payload)
    elif fmt == "legacy":
        with open(path, "wb") as f:
            for header in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
                pickle.dump(header, f, protocol=2)
            f.write(payload)
    else:
        path.write_bytes(payload)  # a bare pickle, as some tools save
    with pytest.raises(_core.ModelError, match=r"evil\.pt") as info:
        load_checkpoint(path)
    assert not os.path.exists(MARKER)
    assert "refused global" in str(info.value)
    assert any(n in str(info.value) for n in ("system", "exec", "call", "eval"))


def test_truncated_and_missing_files(fake_torch, tmp_path):
    w = Writer(fake_torch)
    w.legacy({"w": w.tensor(np.arange(100, dtype=np.float32))}, tmp_path / "ok.pt")
    data = (tmp_path / "ok.pt").read_bytes()
    for cut in (10, len(data) // 2, len(data) - 4):
        (tmp_path / "cut.pt").write_bytes(data[:cut])
        with pytest.raises(_core.ModelError, match="cut.pt"):
            load_checkpoint(tmp_path / "cut.pt")
    with pytest.raises(_core.ModelError, match="absent.pt"):
        load_checkpoint(tmp_path / "absent.pt")


def test_state_dict_finds_nested_weights():
    w = np.zeros(2, dtype=np.float32)
    assert state_dict({"a": w}) == {"a": w}
    assert state_dict({"model_state": {"a": w}, "step": 1}) == {"a": w}
    with pytest.raises(_core.ModelError, match="top-level keys"):
        state_dict({"epoch": 1})
