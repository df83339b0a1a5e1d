"""pyannote's diarization pipelines by name: their config.yaml and the files it names.

A pipeline on the Hugging Face hub is a config.yaml (pyannote.audio's
``Pipeline.from_pretrained`` reads the same file) whose ``pipeline.params``
name the models and whose ``params`` hold the tuned thresholds:

- ``pyannote/speaker-diarization-3.1``: ``segmentation:
  pyannote/segmentation-3.0`` and ``embedding:
  pyannote/wespeaker-voxceleb-resnet34-LM``, two other repos, each with a
  pytorch_model.bin at its root; ``clustering: AgglomerativeClustering`` with
  ``method: centroid, threshold: 0.7045654963945799, min_cluster_size: 12``.
- ``pyannote/speaker-diarization-community-1``: everything in its own repo,
  named ``$model/<subfolder>``: segmentation/pytorch_model.bin,
  embedding/pytorch_model.bin, plda/plda.npz and plda/xvec_transform.npz;
  ``clustering: VBxClustering`` with ``threshold: 0.6, Fa: 0.07, Fb: 0.8``.

Both repos are gated: the account whose token is used must have accepted
their conditions on the hub. Files come through huggingface_hub (``pip
install saywho[hub]``) into its cache, which follows HF_HOME; offline
(HF_HUB_OFFLINE=1) they must already be there. A local folder holding a
config.yaml (a copy of such a repo) works too, without the hub.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .._internal import environment
from .._internal.native import _core
from .hub import _cache_dir, _offline_env

PIPELINES = {
    "pyannote/speaker-diarization-3.1": "segmentation-3.0, WeSpeaker ResNet34, AHC",
    "pyannote/speaker-diarization-community-1": "segmentation-3.0, WeSpeaker ResNet34, VBx on a PLDA",
}
CLUSTERINGS = ("AgglomerativeClustering", "VBxClustering")
MODEL_FILE = "pytorch_model.bin"
PLDA_FILES = ("plda.npz", "xvec_transform.npz")
WINDOW = 10.0  # segmentation-3.0's chunk, in seconds
DEFAULT_STEP_RATIO = 0.1  # pyannote's segmentation_step: a tenth of the window
TOKEN_HELP = (
    "pass a Hugging Face access token (https://hf.co/settings/tokens) as token= "
    "(saywho.Pipeline, saywho.diarize), --hf-token on the command line, or the HF_TOKEN "
    "environment variable"
)


@dataclass
class PipelineFiles:
    """What a pyannote pipeline needs, found on disk."""

    name: str
    segmentation: Path  # pytorch_model.bin
    embedding: Path  # pytorch_model.bin
    plda: Path | None  # folder with plda.npz and xvec_transform.npz (VBx only)
    clustering: str  # "AgglomerativeClustering" or "VBxClustering"
    params: dict = field(default_factory=dict)  # the clustering's thresholds
    step: float = DEFAULT_STEP_RATIO * WINDOW  # seconds between chunks
    min_duration_off: float = 0.0


@dataclass
class _Source:
    """Where a config's files come from: a hub repo (at a revision) or a folder."""

    repo: str | None = None
    folder: Path | None = None
    revision: str | None = None


class _Hub:
    """huggingface_hub calls with saywho's error messages."""

    def __init__(self, token, cache_dir, local_files_only):
        self.token = token
        self.where = _cache_dir(cache_dir)
        self.offline = _offline_env() if local_files_only is None else bool(local_files_only)

    def _module(self, what: str):
        try:
            import huggingface_hub
        except ImportError:
            raise _core.ModelError(
                f"{what} comes from the Hugging Face hub: pip install saywho[hub] "
                "(huggingface_hub), or pass the path of a folder holding its config.yaml"
            ) from None
        return huggingface_hub

    def has_token(self) -> bool:
        if self.token not in (None, True):
            return bool(self.token)
        if environment.read("HF_TOKEN"):
            return True
        hub = self._module("the token")
        get = getattr(hub, "get_token", None)
        try:
            return bool(get()) if get else False
        except Exception:  # a broken token file is no token
            return False

    def download(self, repo: str, filename: str, subfolder: str | None, revision=None) -> Path:
        hub = self._module(f"{repo}/{filename}")
        try:  # where huggingface_hub keeps its exceptions: errors (>= 0.23), else utils
            from huggingface_hub import errors
        except ImportError:
            from huggingface_hub import utils as errors
        gated = getattr(errors, "GatedRepoError", ())
        missing_repo = getattr(errors, "RepositoryNotFoundError", ())
        not_cached = getattr(errors, "LocalEntryNotFoundError", ())
        missing_file = getattr(errors, "EntryNotFoundError", ())
        missing_revision = getattr(errors, "RevisionNotFoundError", ())
        shown = f"{repo}/{subfolder + '/' if subfolder else ''}{filename}"
        url = f"https://hf.co/{repo}"
        try:
            path = hub.hf_hub_download(
                repo,
                filename,
                subfolder=subfolder or None,
                revision=revision,
                cache_dir=os.fspath(self.where),
                token=self.token,
                local_files_only=self.offline,
            )
        except gated:
            if self.has_token():
                raise _core.ModelError(
                    f"{repo} is gated and the Hugging Face account of this token has not "
                    f"accepted its conditions: accept them at {url} (logged in as that "
                    "account), then run again"
                ) from None
            raise _core.ModelError(
                f"{repo} is gated: accept its conditions at {url}, then {TOKEN_HELP}"
            ) from None
        except missing_repo:
            how = (
                "or this token cannot see it"
                if self.has_token()
                else "or it is gated or private and needs a token: " + TOKEN_HELP
            )
            raise _core.ModelError(
                f"{repo} was not found on the Hugging Face hub, {how} "
                f"(and accept its conditions at {url})"
            ) from None
        except missing_revision:
            raise _core.ModelError(f"{repo} has no revision {revision!r}") from None
        except not_cached:
            if self.offline:
                raise _core.ModelError(
                    f"{shown} is not in the Hugging Face cache ({self.where}, which follows "
                    "HF_HOME) and downloads are off (HF_HUB_OFFLINE=1 or local_files_only): "
                    f"run once online (accept the conditions at {url}, then {TOKEN_HELP})"
                ) from None
            raise _core.ModelError(
                f"{shown} could not be downloaded (no connection to the hub?) and is not in "
                f"the Hugging Face cache ({self.where})"
            ) from None
        except missing_file:
            raise _core.ModelError(
                f"{repo} has no file {shown}: is it a pyannote pipeline?"
            ) from None
        except Exception as e:  # huggingface_hub's HTTP errors differ across versions
            raise _core.ModelError(
                f"{shown} could not be fetched from the Hugging Face hub: {type(e).__name__}: {e}"
            ) from None
        return Path(path)


def _read_yaml(path: Path) -> dict:
    try:
        import yaml
    except ImportError:
        raise _core.ModelError(
            f"{path}: reading a pipeline's config.yaml needs PyYAML: pip install saywho[hub]"
        ) from None
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise _core.ModelError(f"{path}: not a readable pipeline config ({e})") from None
    if not isinstance(config, dict) or not isinstance(config.get("pipeline"), dict):
        raise _core.ModelError(f"{path}: not a pyannote pipeline config (no 'pipeline' section)")
    return config


def _fetch(hub: _Hub | None, source: _Source, subfolder: str | None, filename: str) -> Path:
    if source.folder is not None:
        path = source.folder / (subfolder or "") / filename
        if not path.is_file():
            raise _core.ModelError(f"{path} is missing: the pipeline's config.yaml names it")
        return path
    assert hub is not None and source.repo is not None
    return hub.download(source.repo, filename, subfolder, source.revision)


def _reference(value, own: _Source, root: Path | None, what: str) -> tuple[_Source, str | None]:
    """A config's name for a model -> (where it lives, subfolder)."""
    if isinstance(value, dict) and "checkpoint" in value:
        sub = value.get("subfolder")
        inner, sub0 = _reference(value["checkpoint"], own, root, what)
        if value.get("revision"):
            inner = _Source(inner.repo, inner.folder, value["revision"])
        return inner, "/".join(p for p in (sub0, sub) if p) or None
    if not isinstance(value, str) or not value:
        raise _core.ModelError(f"the pipeline config names its {what} as {value!r}: not supported")
    if value.startswith("$model/"):
        return own, value[len("$model/") :].strip("/") or None
    local = Path(value) if root is None or os.path.isabs(value) else root / value
    if local.is_file():
        return _Source(folder=local.parent), f"@{local.name}"
    if local.is_dir():
        return _Source(folder=local), None
    parts = value.split("/")
    if len(parts) == 2 and all(parts):
        return _Source(repo=value), None
    raise _core.ModelError(f"the pipeline config names its {what} {value!r}: no such file or repo")


def _fetch_model(hub, ref: tuple[_Source, str | None], filename: str) -> Path:
    source, sub = ref
    if sub is not None and sub.startswith("@"):  # the config named the file itself
        return _fetch(hub, source, None, sub[1:])
    return _fetch(hub, source, sub, filename)


def _number(params: dict, key: str, section: str, path) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _core.ModelError(f"{path}: params.{section}.{key} must be a number, not {value!r}")
    return float(value)


def resolve_pipeline(
    name_or_path: str | os.PathLike,
    *,
    token: str | bool | None = None,
    cache_dir: str | os.PathLike | None = None,
    local_files_only: bool | None = None,
    revision: str | None = None,
) -> PipelineFiles:
    """The files and settings of a pyannote pipeline given by name, or by a
    folder (or config.yaml) laid out like its repo."""
    text = os.fspath(name_or_path)
    hub: _Hub | None = None
    if os.path.isdir(text) or os.path.isfile(text):
        config_path = Path(text) / "config.yaml" if os.path.isdir(text) else Path(text)
        if not config_path.is_file():
            raise _core.ModelError(f"{text}: a pipeline folder must hold config.yaml")
        own = _Source(folder=config_path.parent)
    elif text in PIPELINES:
        hub = _Hub(token, cache_dir, local_files_only)
        config_path = hub.download(text, "config.yaml", None, revision)
        own = _Source(repo=text, revision=revision)
    else:
        known = "; ".join(f"{k} ({v})" for k, v in PIPELINES.items())
        raise _core.ModelError(
            f"{text!r} is not a known diarization pipeline nor a folder holding a pyannote "
            f"config.yaml; the known pipelines are: {known}"
        )
    config = _read_yaml(config_path)
    root = config_path.parent
    pipe = config["pipeline"]
    if not str(pipe.get("name", "")).endswith("SpeakerDiarization"):
        raise _core.ModelError(
            f"{config_path}: pipeline {pipe.get('name')!r} is not pyannote's SpeakerDiarization"
        )
    given = pipe.get("params") or {}
    clustering = given.get("clustering", "VBxClustering")  # pyannote 4's default
    if clustering not in CLUSTERINGS:
        raise _core.ModelError(
            f"{config_path}: clustering {clustering!r} is not one saywho runs ({', '.join(CLUSTERINGS)})"
        )
    # the settings first: a config saywho cannot run fails before any download
    tuned = config.get("params") or {}
    section = tuned.get("clustering") or {}
    if clustering == "VBxClustering":
        params = {
            k: _number(section, k, "clustering", config_path) for k in ("threshold", "Fa", "Fb")
        }
    else:
        method = section.get("method", "centroid")
        if method != "centroid":
            raise _core.ModelError(
                f"{config_path}: AHC method {method!r}: saywho runs centroid linkage only"
            )
        params = {
            "threshold": _number(section, "threshold", "clustering", config_path),
            "min_cluster_size": int(
                _number(section, "min_cluster_size", "clustering", config_path)
            ),
        }
    ratio = given.get("segmentation_step", DEFAULT_STEP_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
        raise _core.ModelError(f"{config_path}: segmentation_step {ratio!r} is not in (0, 1]")
    seg_params = tuned.get("segmentation") or {}

    if hub is None and any(
        isinstance(v, str) and not v.startswith("$model/") and not (root / v).exists()
        for v in (given.get("segmentation"), given.get("embedding"))
    ):
        hub = _Hub(token, cache_dir, local_files_only)  # a folder naming hub repos
    segmentation = _fetch_model(
        hub, _reference(given.get("segmentation"), own, root, "segmentation"), MODEL_FILE
    )
    embedding = _fetch_model(
        hub, _reference(given.get("embedding"), own, root, "embedding"), MODEL_FILE
    )
    plda = None
    if clustering == "VBxClustering":
        source, sub = _reference(given.get("plda", "$model/plda"), own, root, "PLDA")
        files = [_fetch(hub, source, sub, f) for f in PLDA_FILES]
        if files[0].parent != files[1].parent:
            raise _core.ModelError(f"{config_path}: the PLDA's two files lie in different folders")
        plda = files[0].parent
    return PipelineFiles(
        name=text,
        segmentation=segmentation,
        embedding=embedding,
        plda=plda,
        clustering=clustering,
        params=params,
        step=round(float(ratio) * WINDOW, 6),
        min_duration_off=float(seg_params.get("min_duration_off", 0.0) or 0.0),
    )
