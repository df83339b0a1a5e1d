"""What a batch runs on: the inputs named on the command line, expanded.

An input is an audio or video file, a folder (searched recursively for the
extensions below), a glob pattern, or a manifest: a ``.txt``/``.lst`` file
of paths (one a line, ``#`` comments), or a ``.csv``/``.jsonl`` file with a
``path`` column and optional per-file ``num_speakers`` and ``language``.
Relative paths in a manifest are relative to the manifest's folder. Each
file appears once, in the order first named.
"""

from __future__ import annotations

import csv
import glob
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..._internal.native import _core
from ...diarization.speaker_counts import parse_count

#: Extensions a folder is searched for: the audio and video containers
#: FFmpeg reads that recordings come in. A file named directly is taken
#: whatever its extension (FFmpeg decides whether it can read it).
MEDIA_EXTENSIONS = frozenset(
    ".wav .flac .mp3 .m4a .aac .ogg .oga .opus .wma .aif .aiff .amr .ac3 .mka .caf .au "
    ".mp4 .m4v .mkv .mov .webm .avi .wmv .mpg .mpeg .ts .3gp .flv".split()
)
MANIFEST_EXTENSIONS = frozenset({".txt", ".lst", ".csv", ".jsonl"})


@dataclass(frozen=True)
class Item:
    """One file to process, with the options its manifest line gives."""

    path: str
    num_speakers: int | None = None
    language: str | None = None

    def overrides(self) -> dict:
        """Keyword arguments for Pipeline.process that this file sets itself."""
        out = {}
        if self.num_speakers is not None:
            out["num_speakers"] = self.num_speakers
        if self.language is not None:
            out["language"] = self.language
        return out


def _speakers(value, where: str) -> int | None:
    try:
        return parse_count(value, "num_speakers")
    except _core.OptionError as e:
        raise _core.OptionError(f"{where}: {e}") from None


def _row_item(row: dict, base: Path, where: str) -> Item:
    path = row.get("path")
    if not isinstance(path, str) or not path.strip():
        raise _core.OptionError(f"{where}: no path")
    language = row.get("language")
    if language is not None and not isinstance(language, str):
        raise _core.OptionError(f"{where}: language {language!r} is not a code")
    return Item(
        str(base / path.strip()),
        _speakers(row.get("num_speakers"), where),
        language.strip() or None if language else None,
    )


def read_manifest(manifest: str | os.PathLike) -> list[Item]:
    """The items a manifest lists; OptionError naming the line for a bad one."""
    manifest = Path(manifest)
    base = manifest.parent
    suffix = manifest.suffix.lower()
    try:
        text = manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _core.OptionError(f"{manifest}: cannot read the manifest: {e}") from None
    items = []
    if suffix == ".csv":
        rows = csv.DictReader(text.splitlines())
        if "path" not in (rows.fieldnames or ()):
            raise _core.OptionError(f"{manifest}: a CSV manifest needs a 'path' column")
        for n, row in enumerate(rows, start=2):
            items.append(_row_item(row, base, f"{manifest}:{n}"))
    elif suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise _core.OptionError(f"{manifest}:{n}: not JSON: {e}") from None
            if not isinstance(row, dict):
                raise _core.OptionError(f"{manifest}:{n}: not a JSON object")
            items.append(_row_item(row, base, f"{manifest}:{n}"))
    else:
        for line in text.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                items.append(Item(str(base / line)))
    return items


def _folder(folder: Path) -> list[Item]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()  # the same order on every run and every machine
        for name in sorted(files):
            if Path(name).suffix.lower() in MEDIA_EXTENSIONS:
                found.append(Item(os.path.join(root, name)))
    return found


def expand_inputs(inputs: list[str]) -> list[Item]:
    """Files, folders, globs and manifests as a list of distinct items.

    A name that is neither an existing file or folder nor a glob that
    matches is an OptionError (a typo should not run an empty batch); a
    file that exists but cannot be decoded is the run's business (an
    ``error`` line in the index).
    """
    items: dict[str, Item] = {}

    def add(item: Item) -> None:
        key = os.path.abspath(item.path)
        items.setdefault(key, Item(key, item.num_speakers, item.language))

    for name in inputs:
        path = Path(name)
        if path.is_dir():
            for item in _folder(path):
                add(item)
        elif path.is_file() and path.suffix.lower() in MANIFEST_EXTENSIONS:
            for item in read_manifest(path):
                add(item)
        elif path.exists():
            add(Item(name))
        elif glob.has_magic(name):
            matches = sorted(glob.glob(name, recursive=True))
            if not matches:
                raise _core.OptionError(f"{name}: the pattern matches no file")
            for match in matches:
                if Path(match).is_dir():
                    for item in _folder(Path(match)):
                        add(item)
                else:
                    add(Item(match))
        else:
            raise _core.OptionError(f"{name}: no such file or folder")
    return list(items.values())
