"""A Hugging Face hub cache built by hand, laid out as huggingface_hub lays it out.

    <HF_HOME>/hub/models--<owner>--<name>/
        refs/main                      the commit the branch points at
        blobs/<sha256>                 each file's bytes, named by their hash
        snapshots/<commit>/<path>      relative symlinks into blobs/

With HF_HOME pointed at its root and HF_HUB_OFFLINE=1, huggingface_hub (and
so saywho) finds files there exactly as it finds what it downloaded, and
never goes online. Shared by the pyannote-pipeline and notebook tests.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def repo_folder(hub: Path, repo: str) -> Path:
    return hub / ("models--" + repo.replace("/", "--"))


def add_files(hub: Path, repo: str, files: dict[str, Path | bytes], link: bool = False) -> Path:
    """Puts ``files`` (path in the repo -> a file to copy, or bytes) into the
    cache as repo ``repo``'s main branch; returns its snapshot folder. With
    ``link``, each blob is a symlink to its source file instead of a copy
    (for big read-only weights)."""
    folder = repo_folder(hub, repo)
    commit = hashlib.sha1(repo.encode()).hexdigest()  # any 40-hex commit id will do
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    (folder / "blobs").mkdir(exist_ok=True)
    snapshot = folder / "snapshots" / commit
    for name, content in files.items():
        data = content if isinstance(content, bytes) else Path(content).read_bytes()
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        if blob.is_symlink() or blob.exists():
            blob.unlink()
        if link and not isinstance(content, bytes):
            blob.symlink_to(Path(content).resolve())
        else:
            blob.write_bytes(data)
        link_path = snapshot / name
        link_path.parent.mkdir(parents=True, exist_ok=True)
        if link_path.is_symlink() or link_path.exists():
            link_path.unlink()
        link_path.symlink_to(os.path.relpath(blob, link_path.parent))
    return snapshot


def add_pyannote_pipelines(
    hub: Path, segmentation: Path, embedding: Path, plda: Path
) -> dict[str, Path]:
    """Both pyannote pipelines, with their real config.yaml, holding the given
    segmentation and embedding checkpoints and community-1's PLDA folder."""
    configs = DATA / "pyannote"
    return {
        "3.1": add_files(
            hub,
            "pyannote/speaker-diarization-3.1",
            {"config.yaml": configs / "speaker-diarization-3.1.config.yaml"},
        ),
        "segmentation": add_files(
            hub, "pyannote/segmentation-3.0", {"pytorch_model.bin": segmentation}
        ),
        "embedding": add_files(
            hub, "pyannote/wespeaker-voxceleb-resnet34-LM", {"pytorch_model.bin": embedding}
        ),
        "community-1": add_files(
            hub,
            "pyannote/speaker-diarization-community-1",
            {
                "config.yaml": configs / "speaker-diarization-community-1.config.yaml",
                "segmentation/pytorch_model.bin": segmentation,
                "embedding/pytorch_model.bin": embedding,
                "plda/plda.npz": plda / "plda.npz",
                "plda/xvec_transform.npz": plda / "xvec_transform.npz",
            },
        ),
    }
