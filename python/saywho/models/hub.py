"""Whisper models by name: "tiny.en", "large-v3", a Hugging Face repo id, or a folder.

A known name maps to the CTranslate2 conversion that faster-whisper uses
(Systran's, and the community's turbo); an ``owner/name`` id is taken as
given. Both download through huggingface_hub (an optional extra,
``pip install saywho[hub]``) into its cache, which follows HF_HOME; only the
files a model needs are fetched. Offline (HF_HUB_OFFLINE=1, or
``local_files_only=True``) the cache must already hold the model, and a
clear ModelError says which repo is missing and where it would go. A path to
an existing folder is used as it is (a checkout's test weights are folders:
tests/weights.py finds them).

"auto" (the saywho command's default) is large-v3-turbo on a GPU and small
on the CPU: see default_model_name.
"""

from __future__ import annotations

import os
from pathlib import Path

from .._internal import environment
from .._internal.native import _core

# name -> Hugging Face repo: the same conversions faster-whisper downloads
WHISPER_REPOS = {
    "tiny.en": "Systran/faster-whisper-tiny.en",
    "tiny": "Systran/faster-whisper-tiny",
    "base.en": "Systran/faster-whisper-base.en",
    "base": "Systran/faster-whisper-base",
    "small.en": "Systran/faster-whisper-small.en",
    "small": "Systran/faster-whisper-small",
    "medium.en": "Systran/faster-whisper-medium.en",
    "medium": "Systran/faster-whisper-medium",
    "large-v1": "Systran/faster-whisper-large-v1",
    "large-v2": "Systran/faster-whisper-large-v2",
    "large-v3": "Systran/faster-whisper-large-v3",
    "large": "Systran/faster-whisper-large-v3",
    "distil-small.en": "Systran/faster-distil-whisper-small.en",
    "distil-medium.en": "Systran/faster-distil-whisper-medium.en",
    "distil-large-v2": "Systran/faster-distil-whisper-large-v2",
    "distil-large-v3": "Systran/faster-distil-whisper-large-v3",
    "large-v3-turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
    "turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
}

# The model a run takes when none is named. On a GPU, large-v3-turbo: large-v3's
# encoder with 4 decoder layers instead of 32, so it decodes several times
# faster than large-v3 at close to its accuracy, and it fits a T4's 15 GB
# with room for diarization. On the CPU, small: WhisperX's default and the
# model of faster-whisper's CPU benchmark, multilingual, a clear step in
# accuracy over base, where a large model (about 6x the parameters) would be
# several times slower.
DEFAULT_GPU_MODEL = "large-v3-turbo"
DEFAULT_CPU_MODEL = "small"
AUTO = "auto"


def is_auto(name_or_path) -> bool:
    """Whether ``name_or_path`` asks for the device's default model (a folder
    named "auto" is still a folder)."""
    return isinstance(name_or_path, str) and name_or_path == AUTO and not os.path.isdir(AUTO)


def default_model_name(device: str) -> str:
    """The model name "auto" stands for on ``device`` ("cpu", "cuda", "cuda:N")."""
    return DEFAULT_GPU_MODEL if device.startswith("cuda") else DEFAULT_CPU_MODEL


# what a CTranslate2 Whisper folder needs; nothing else is downloaded
FILES = ["config.json", "preprocessor_config.json", "model.bin", "tokenizer.json", "vocabulary.*"]


def _offline_env() -> bool:
    return environment.is_on("HF_HUB_OFFLINE")


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    if environment.read("HF_HUB_CACHE"):
        return Path(environment.read("HF_HUB_CACHE"))
    home = environment.read("HF_HOME") or os.path.join(
        environment.read("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface"
    )
    return Path(home) / "hub"


def resolve_model(
    name_or_path: str | os.PathLike,
    *,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    local_files_only: bool | None = None,
    revision: str | None = None,
) -> Path:
    """The local folder of a Whisper model given by name, repo id or path."""
    text = os.fspath(name_or_path)
    if os.path.isdir(text):
        return Path(text)
    if text == AUTO:
        raise _core.ModelError(
            'model "auto" depends on the device: resolve default_model_name(device) instead'
        )
    repo = WHISPER_REPOS.get(text)
    if repo is None:
        parts = text.split("/")
        if len(parts) == 2 and all(parts) and not os.path.exists(text):
            repo = text
        else:
            raise _core.ModelError(
                f"{text!r} is neither a model folder nor a known model name "
                f"({', '.join(WHISPER_REPOS)}, auto) nor a Hugging Face "
                "repo id (owner/name)"
            )
    try:
        import huggingface_hub
    except ImportError:
        raise _core.ModelError(
            f"model {text!r} comes from the Hugging Face repo {repo}: "
            f'pip install "saywho[hub]" (huggingface_hub) to download it on first use, or pass '
            f"the path of a folder holding its {_NEEDS}"
        ) from None
    offline = _offline_env() if local_files_only is None else local_files_only
    where = _cache_dir(cache_dir)
    try:
        path = huggingface_hub.snapshot_download(
            repo,
            allow_patterns=FILES,
            local_files_only=offline,
            # our own reading of HF_HOME, now: huggingface_hub reads it once, at import
            cache_dir=os.fspath(where),
            token=token,
            revision=revision,
        )
    except Exception as e:  # huggingface_hub's errors differ across versions
        # one line: huggingface_hub's own messages run to a paragraph
        if offline:
            why = "offline (HF_HUB_OFFLINE is set)" if local_files_only is None else "offline"
            raise _core.ModelError(
                f"model {text!r} (Hugging Face repo {repo}) is not in the cache at {where} and "
                f"saywho is {why}: run once with the network to download it there, or pass "
                f"the path of a folder holding its {_NEEDS}"
            ) from None
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise _core.ModelError(
            f"model {text!r} (Hugging Face repo {repo}) could not be downloaded to {where} "
            f"({type(e).__name__}: {first}): check the network (and token= for a private "
            f"repo), or pass the path of a folder holding its {_NEEDS}"
        ) from None
    return Path(path)


_NEEDS = "model.bin, config.json and tokenizer.json (or a Hugging Face Whisper checkpoint)"
