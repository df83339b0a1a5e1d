"""Where one input's transcripts go: a folder inside the output folder.

Every writer that takes a name from outside (the CLI, the batch runner, a
service) gets its folder here, so no input name can make saywho write outside
the folder the user named, or over another input's transcripts:

- the folder's name is the input's stem made safe (no separators, NUL or
  control characters, no ``.``/``..``, no leading dash or dot, at most
  ``MAX_STEM_BYTES`` of UTF-8; letters of any script kept), then a dash and
  the first ``HASH_CHARS`` hex digits of the SHA-256 of the input's absolute
  path. Same-named inputs in different folders, or one stem with different
  extensions, get different folders; the same input always gets the same one
  (a rerun writes where the first run did, which is what resuming needs);
- the resolved folder (symlinks followed) must lie inside the resolved output
  folder, else ``OptionError`` names the input and nothing is written.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from pathlib import Path

from .._internal.native import _core

# 48 bits: among a million inputs that share a stem, a collision is ~2e-3 likely
HASH_CHARS = 12
# leaves room for the hash and ext4's 255-byte name limit, with margin for
# file systems that count in UTF-16 units
MAX_STEM_BYTES = 120
FALLBACK_STEM = "audio"
# characters that are never kept: separators of every OS, and those Windows
# shares reject (a folder written here may be copied there)
_REJECTED = set('/\\:*?"<>|')


def _kept(ch: str) -> bool:
    if ch in _REJECTED:
        return False
    # Cc: control characters (C0, DEL, C1); Cf/Cs/Co/Cn: format marks (bidi
    # overrides among them), surrogates from undecodable bytes, private use
    # and unassigned code points: none belongs in a name a person reads
    return unicodedata.category(ch)[0] != "C"


def _stem_of(source: str) -> str:
    name = os.path.basename(source.rstrip("/\\")) or source
    stem, dot, ext = name.rpartition(".")
    # "talk.flac" -> "talk"; ".hidden" and "noext" keep their whole name
    return stem if dot and stem else name


def safe_stem(source: str | os.PathLike) -> str:
    """The part of an output folder's name taken from ``source``'s stem."""
    text = unicodedata.normalize("NFC", os.fsdecode(os.fspath(source)))
    cleaned = "".join(ch if _kept(ch) else "_" for ch in _stem_of(text))
    cleaned = " ".join(cleaned.split())  # tabs, newlines' stand-ins, runs of spaces
    cleaned = cleaned.lstrip(".-_ ").rstrip(". ")
    encoded = cleaned.encode("utf-8")
    if len(encoded) > MAX_STEM_BYTES:
        cleaned = encoded[:MAX_STEM_BYTES].decode("utf-8", errors="ignore").rstrip(". ")
    return cleaned or FALLBACK_STEM


def input_key(source: str | os.PathLike) -> str:
    """The hash that tells apart inputs with the same stem: of the absolute
    path as given (not following symlinks, so two links to one file are two
    inputs), as bytes, so undecodable names hash too."""
    absolute = os.path.abspath(os.fsencode(os.fspath(source)))
    return hashlib.sha256(absolute).hexdigest()[:HASH_CHARS]


def output_name(source: str | os.PathLike) -> str:
    """The folder name for ``source``'s transcripts: ``<safe stem>-<hash>``."""
    return f"{safe_stem(source)}-{input_key(source)}"


def inside(folder: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``folder`` lies in ``root`` once both are resolved (symlinks
    followed, as far as they exist)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(folder)
    return real != real_root and os.path.commonpath([real, real_root]) == real_root


def output_dir(output_root: str | os.PathLike, source: str | os.PathLike) -> Path:
    """The folder inside ``output_root`` where ``source``'s transcripts go.

    Creates nothing. Raises ``OptionError`` naming ``source`` when the folder
    would not lie inside ``output_root`` (a symlink planted at its name).
    """
    folder = Path(output_root) / output_name(source)
    if not inside(folder, output_root):
        raise _core.OptionError(
            f"{os.fsdecode(os.fspath(source))!r}: its output folder {str(folder)!r} resolves "
            f"outside {os.fspath(output_root)!r}; nothing written"
        )
    return folder
