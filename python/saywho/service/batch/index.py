"""OUT/index.jsonl: one line per file as it finishes, and what resume reads.

A line is appended (one ``write`` of a whole line, flushed and synced) only
after the file's transcripts are all renamed into place, so a line that
says ``ok`` never points at a partial transcript. A run killed in the middle
of a line leaves at most one torn last line, which reading skips. At the end
of a run (also after Ctrl-C) the index is rewritten atomically with exactly
one line per file, its latest. A file counts as done only when its line
says ``ok`` and every output it lists is still there.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..._internal.native import _core
from ...formats.writers import write_atomic

INDEX_NAME = "index.jsonl"
LOCK_NAME = ".index.lock"


@dataclass
class IndexRecord:
    """One file's line. ``outputs`` are relative to the index's folder."""

    path: str
    status: str  # "ok" or "error"
    error: str | None = None
    duration: float | None = None
    language: str | None = None
    speakers: list[str] = field(default_factory=list)
    seconds: float | None = None
    x_realtime: float | None = None
    outputs: list[str] = field(default_factory=list)

    def line(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False) + "\n"


def _parse(line: str) -> IndexRecord | None:
    try:
        raw = json.loads(line)
        record = IndexRecord(**raw)
    except (json.JSONDecodeError, TypeError):
        return None  # a torn last line, or not ours
    return record if record.status in ("ok", "error") else None


class Index:
    """The index of one output folder, held by one run at a time (a lock
    file: two runs appending to one index would interleave their work)."""

    def __init__(self, out_dir: str | os.PathLike):
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.path = self.out / INDEX_NAME
        self._lock = open(self.out / LOCK_NAME, "w")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise _core.OptionError(
                f"{self.out}: another saywho batch is writing this output folder"
            ) from None
        self.records: dict[str, IndexRecord] = {}
        if self.path.exists():
            for raw in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                record = _parse(raw)
                if record is not None:
                    self.records[record.path] = record
        self._file = None

    # -- what resume asks ----------------------------------------------------
    def is_done(self, path: str) -> bool:
        record = self.records.get(path)
        return (
            record is not None
            and record.status == "ok"
            and bool(record.outputs)
            and all((self.out / p).is_file() for p in record.outputs)
        )

    def has_failed(self, path: str) -> bool:
        record = self.records.get(path)
        return record is not None and record.status == "error"

    # -- what a run writes ---------------------------------------------------
    def append(self, record: IndexRecord) -> None:
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
            # after a torn line, start on a line of our own
            if self._file.tell() > 0:
                with open(self.path, "rb") as f:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        self._file.write("\n")
        self._file.write(record.line())
        self._file.flush()
        os.fsync(self._file.fileno())
        self.records[record.path] = record

    def compact(self, order: list[str] = ()) -> None:
        """Rewrites the index atomically: one line per file, the files of
        ``order`` first in that order, then those of earlier runs."""
        self._close_file()
        paths = [p for p in order if p in self.records]
        first = set(paths)
        paths += [p for p in self.records if p not in first]
        write_atomic(self.path, lambda: "".join(self.records[p].line() for p in paths))

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def close(self) -> None:
        self._close_file()
        if not self._lock.closed:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_index(out_dir: str | os.PathLike) -> list[IndexRecord]:
    """Every well-formed line of OUT/index.jsonl, in file order."""
    path = Path(out_dir) / INDEX_NAME
    records = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = _parse(raw)
        if record is not None:
            records.append(record)
    return records
