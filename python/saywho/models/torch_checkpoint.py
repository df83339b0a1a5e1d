"""PyTorch checkpoints read without torch and without running their pickle code.

A ``torch.save`` file is a pickle whose tensors point into raw storages kept
beside it: in a zip archive (``<name>/data.pkl`` plus ``<name>/data/<key>``,
torch >= 1.6) or, in the legacy format, appended after the pickle. Plain
``pickle.load`` on such a file runs whatever callables the file names, so a
downloaded checkpoint could run ``os.system``. Here the unpickler resolves
only an explicit allowlist of globals, each to saywho's own inert stand-in,
and refuses everything else before anything runs.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
import struct
import zipfile
from typing import Any

import numpy as np

from .._internal.native import _core

# Storage classes torch names in checkpoints, and what their bytes hold.
_STORAGE_DTYPES = {
    "DoubleStorage": "f8",
    "FloatStorage": "f4",
    "HalfStorage": "f2",
    "BFloat16Storage": "u2",  # NumPy has no bfloat16; widened to float32 below
    "LongStorage": "i8",
    "IntStorage": "i4",
    "ShortStorage": "i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "b1",
}

# The legacy format starts with this number, pickled.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


class _StorageType:
    """Stands for ``torch.<X>Storage``: only its element type matters."""

    def __init__(self, name: str):
        self.name = name
        self.dtype = np.dtype(_STORAGE_DTYPES[name])


class _Inert:
    """Stands for a metadata class (not a tensor) that checkpoints carry.

    pyannote's checkpoints hold ``Specifications`` and enums beside the
    weights; reading them must not need pyannote, nor run its code. The
    object only records its arguments and state.
    """

    qualname = "?"

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def __setstate__(self, state):
        self.state = state

    def __repr__(self):
        return f"<{self.qualname} {getattr(self, 'args', ()) or ''}{getattr(self, 'state', '')}>"


class _TorchVersion(str):
    """``torch.torch_version.TorchVersion`` is a str subclass; keep the str."""


def _inert(qualname: str) -> type:
    return type(qualname.rsplit(".", 1)[-1], (_Inert,), {"qualname": qualname})


# Metadata classes found in real checkpoints (pyannote's carry these four, as
# torch's own weights_only loader reports) that are safe as inert records.
_INERT_GLOBALS = {
    ("torch.torch_version", "TorchVersion"): _TorchVersion,
    **{
        ("pyannote.audio.core.task", name): _inert(f"pyannote.audio.core.task.{name}")
        for name in ("Specifications", "Problem", "Resolution")
    },
}


class _Storage:
    """One storage's elements as a flat array, and the file they came from."""

    def __init__(self, data: np.ndarray, storage_type: _StorageType):
        self.data = data
        self.type = storage_type


def _rebuild_tensor(storage, offset, size, stride, requires_grad, backward_hooks, metadata=None):
    return _tensor(storage, offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, state=None):
    return data


def _tensor(storage, offset, size, stride) -> np.ndarray:
    if not isinstance(storage, _Storage):
        raise _core.ModelError(f"tensor built from {type(storage).__name__}, not a storage")
    shape, steps = tuple(size), tuple(stride)
    ints = [offset, *shape, *steps]
    if len(shape) != len(steps) or not all(type(v) is int and v >= 0 for v in ints):
        raise _core.ModelError(f"bad tensor layout: offset {offset} size {size} stride {stride}")
    flat = storage.data
    if 0 in shape:
        out = np.zeros(shape, dtype=flat.dtype)
    else:
        # as_strided reads raw memory: a hostile layout must not reach past
        # the storage's end.
        last = offset + sum((n - 1) * s for n, s in zip(shape, steps))
        if last >= flat.size:
            raise _core.ModelError(
                f"tensor layout reaches element {last} of a {flat.size}-element storage"
            )
        view = np.lib.stride_tricks.as_strided(
            flat[offset:], shape, [s * flat.itemsize for s in steps], writeable=False
        )
        out = np.array(view, dtype=flat.dtype.newbyteorder("="), order="C")
    if storage.type.name == "BFloat16Storage":
        out = (out.astype(np.uint32) << 16).view(np.float32)
    return out


# The only globals a checkpoint may name, each mapped to its stand-in.
_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): collections.OrderedDict,
    **{("torch", name): _StorageType(name) for name in _STORAGE_DTYPES},
    **_INERT_GLOBALS,
}


class _Unpickler(pickle.Unpickler):
    """Resolves allowlisted globals only; storages come from ``load_storage``."""

    def __init__(self, file, path: str, load_storage):
        super().__init__(file)
        self._path = path
        self._load_storage = load_storage

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except (KeyError, TypeError):
            raise _core.ModelError(
                f"{self._path}: refused global {module}.{name} in the checkpoint's pickle "
                "(saywho loads tensors and plain containers only, and runs no code from "
                "model files)"
            ) from None

    def persistent_load(self, pid) -> Any:
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise _core.ModelError(f"{self._path}: unknown persistent id {pid!r:.80}")
        storage_type, key, numel = pid[1], str(pid[2]), pid[4]
        if not isinstance(storage_type, _StorageType):
            raise _core.ModelError(f"{self._path}: storage of unknown type {storage_type!r:.80}")
        storage = self._load_storage(key, storage_type, numel)
        view = pid[5] if len(pid) > 5 else None
        if view is not None:
            # Legacy view of a bigger storage: (view key, offset, size).
            _, start, count = view
            storage = _Storage(storage.data[start : start + count], storage_type)
        return storage


def load_checkpoint(path: str | os.PathLike[str]) -> Any:
    """The object ``torch.save`` wrote to ``path``, tensors as NumPy arrays.

    Raises ``ModelError`` naming the file for a refused global (nothing of
    it runs), a corrupt file, or a format this reader does not know.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            # torch's own test: a zip starts with a local file header. (The
            # end-of-archive scan of zipfile.is_zipfile can be fooled by
            # weights in a legacy file.)
            if f.read(4) == b"PK\x03\x04":
                return _load_zip(name)
            f.seek(0)
            return _load_legacy(f, name)
    except _core.ModelError as e:
        if name in str(e):
            raise
        raise _core.ModelError(f"{name}: {e}") from None
    except OSError as e:
        raise _core.ModelError(f"{name}: cannot read checkpoint: {e.strerror or e}") from None
    except Exception as e:
        # Whatever a truncated or crafted pickle makes the machinery raise.
        raise _core.ModelError(
            f"{name}: not a readable PyTorch checkpoint ({type(e).__name__}: {e})"
        ) from None


def _load_zip(name: str) -> Any:
    with zipfile.ZipFile(name) as archive:
        pickles = [n for n in archive.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
        if not pickles:
            raise _core.ModelError("zip archive without data.pkl: not a torch.save file")
        prefix = pickles[0][: -len("data.pkl")]
        names = set(archive.namelist())
        order = "<"
        if prefix + "byteorder" in names:
            order = ">" if archive.read(prefix + "byteorder").strip() == b"big" else "<"
        cache: dict[str, _Storage] = {}

        def load_storage(key: str, storage_type: _StorageType, numel) -> _Storage:
            if key not in cache:
                raw = archive.read(f"{prefix}data/{key}")
                dtype = storage_type.dtype.newbyteorder(order)
                usable = len(raw) - len(raw) % dtype.itemsize
                cache[key] = _Storage(np.frombuffer(raw[:usable], dtype=dtype), storage_type)
            return cache[key]

        with archive.open(pickles[0]) as f:
            return _Unpickler(io.BytesIO(f.read()), name, load_storage).load()


def _load_legacy(f, name: str) -> Any:
    def no_storage(*_):
        raise _core.ModelError("storage in a header pickle")

    def header():
        return _Unpickler(f, name, no_storage).load()

    if header() != _LEGACY_MAGIC:
        raise _core.ModelError("neither a zip archive nor a legacy torch.save file")
    header()  # protocol version
    sys_info = header()
    order = ">" if isinstance(sys_info, dict) and sys_info.get("little_endian") is False else "<"

    # The storages follow the main pickle, whose persistent ids say their
    # element types: a first pass notes those, the second builds tensors.
    start = f.tell()
    types: dict[str, _StorageType] = {}
    empty = {}

    def note_type(key: str, storage_type: _StorageType, numel) -> _Storage:
        types[key] = storage_type
        return empty.setdefault(key, _Storage(np.zeros(0, storage_type.dtype), storage_type))

    _DryUnpickler(f, name, note_type).load()
    keys = header()
    if not isinstance(keys, list):
        raise _core.ModelError("legacy storage key list missing")
    storages: dict[str, _Storage] = {}
    for key in keys:
        storage_type = types.get(str(key))
        if storage_type is None:
            raise _core.ModelError(f"storage {key} has no type")
        (numel,) = struct.unpack("<q", _read_exact(f, 8))
        dtype = storage_type.dtype.newbyteorder(order)
        raw = _read_exact(f, numel * dtype.itemsize)
        storages[str(key)] = _Storage(np.frombuffer(raw, dtype=dtype), storage_type)
    f.seek(start)
    return _Unpickler(f, name, lambda key, *_: storages[key]).load()


class _DryUnpickler(_Unpickler):
    """First legacy pass: refuses the same globals, builds no tensor."""

    def find_class(self, module: str, name: str) -> Any:
        found = super().find_class(module, name)
        return (lambda *args: None) if found is _rebuild_tensor else found


def _read_exact(f, n: int) -> bytes:
    if n < 0:
        raise _core.ModelError("negative storage size")
    data = f.read(n)
    if len(data) != n:
        raise _core.ModelError("file ends inside a storage")
    return data


def state_dict(checkpoint: Any) -> dict[str, np.ndarray]:
    """The name -> array dictionary inside a loaded checkpoint.

    A bare ``model.state_dict()`` file is one already; training checkpoints
    nest it (pyannote and Lightning under ``"state_dict"``).
    """
    if _is_tensor_dict(checkpoint):
        return dict(checkpoint)
    if isinstance(checkpoint, dict):
        for key in ("state_dict", "model_state_dict", "model_state", "model"):
            if _is_tensor_dict(checkpoint.get(key)):
                return dict(checkpoint[key])
        found = ", ".join(repr(k) for k in list(checkpoint)[:10])
        raise _core.ModelError(f"no tensor dictionary in the checkpoint (top-level keys: {found})")
    raise _core.ModelError(f"checkpoint holds a {type(checkpoint).__name__}, not a dictionary")


def _is_tensor_dict(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and bool(value)
        and all(isinstance(k, str) and isinstance(v, np.ndarray) for k, v in value.items())
    )
