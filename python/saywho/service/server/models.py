"""Which Whisper model a request's ``model`` field names.

OpenAI's names map to the server's default model (``whisper-1`` and the
gpt-4o transcribers; ``gpt-4o-transcribe-diarize`` turns speakers on); the
default is also served under its own name; any other name must be one
saywho.models.hub knows (``tiny`` ... ``large-v3-turbo``), a Hugging Face
repo id, or a name the operator gave a folder (``--model-folder
NAME=FOLDER``). A client never names a path on the server: folders are the
operator's to configure (``--model``, ``--model-folder``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...models.hub import WHISPER_REPOS
from .errors import unknown_model

DEFAULT_ALIASES = ("whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe")
DIARIZE_ALIASES = ("gpt-4o-transcribe-diarize",)
REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ModelChoice:
    load: str  # what Pipeline(model=...) is given
    diarize: bool  # the name itself asks for speakers


def served_name(default: str) -> str:
    """The default model's own name in /v1/models: a folder's name, or the name given."""
    return Path(default).name if os.path.isdir(default) else default


def choose(name: str, default: str, folders: Mapping[str, str] | None = None) -> ModelChoice:
    """What ``name`` loads; ``folders``: the operator's NAME -> folder."""
    if name in DEFAULT_ALIASES or name == served_name(default) or name == default:
        return ModelChoice(default, False)
    if name in DIARIZE_ALIASES:
        return ModelChoice(default, True)
    if folders and name in folders:
        return ModelChoice(folders[name], False)
    if name in WHISPER_REPOS:
        return ModelChoice(name, False)
    if REPO_ID.match(name) and not os.path.exists(name) and ".." not in name:
        return ModelChoice(name, False)
    raise unknown_model(name)


def listed(default: str, folders: Mapping[str, str] | None = None) -> list[str]:
    """Model ids for GET /v1/models: the default, its aliases, the operator's
    named folders and hub names."""
    named = list(folders or ())
    return [served_name(default), *DEFAULT_ALIASES, *DIARIZE_ALIASES, *named, *WHISPER_REPOS]


def public_name(model: str, default: str, folders: Mapping[str, str] | None = None) -> str:
    """What clients call a loaded model: never the server's folder path."""
    if model == default:
        return served_name(model)
    for name, folder in (folders or {}).items():
        if folder == model:
            return name
    return model
