"""notebooks/colab_quickstart.ipynb runs headless, top to bottom, the way a
Colab user runs it: its first cell pip-installs saywho (here the wheel just
built from this checkout, into a fresh virtual environment whose Python runs
the notebook's kernel), the Whisper model is asked for by name and comes
from a Hugging Face cache (offline, built by hand: tests/hf_cache.py) that
holds the test weights under the names the notebook uses, and diarization
uses the default models. No cell knows about test weights; any cell that
raises fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from saywho.models.hub import WHISPER_REPOS

from .hf_cache import add_files
from .package_build import build_args
from .weights import test_model_dir

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "colab_quickstart.ipynb"
KERNEL = "saywho-notebook-test"


def build_wheel(out: Path) -> Path:
    """This checkout as a wheel (the installed package's build folder is
    reused, tests/package_build.py, so this is quick after it was built)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
        + ["--disable-pip-version-check", *build_args(), "-w", str(out), str(REPO)],
        check=True,
    )
    (wheel,) = out.glob("saywho-*.whl")
    return wheel


def kernel_in_fresh_venv(root: Path) -> Path:
    """A virtual environment (seeing the system's packages: numpy, matplotlib,
    ipykernel, huggingface_hub) registered as a Jupyter kernel; its Python."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = venv / "bin" / "python"
    spec = root / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "saywho notebook test",
                "language": "python",
            }
        )
    )
    return python


def test_quickstart_notebook_runs_as_a_user_runs_it(tmp_path, monkeypatch):
    wheel = build_wheel(tmp_path / "dist")
    python = kernel_in_fresh_venv(tmp_path)
    hub = tmp_path / "hf" / "hub"
    base = test_model_dir("base")
    files = {f: base / f for f in ("model.bin", "config.json", "tokenizer.json", "vocabulary.txt")}
    for name in ("base", "large-v3-turbo"):  # the CPU's model and the GPU's
        add_files(hub, WHISPER_REPOS[name], files, link=True)

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SAYWHO_PACKAGE", str(wheel))
    # pip as configured by the environment, not by the cell: offline, the
    # wheel alone (its dependencies are the system's), into the kernel's venv
    # even where the system Python already has a saywho
    for name in ("PIP_NO_INDEX", "PIP_NO_DEPS", "PIP_IGNORE_INSTALLED"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    for name in ("HF_TOKEN", "SAYWHO_DIARIZATION", "HF_HUB_CACHE", "PYTHONPATH"):
        monkeypatch.delenv(name, raising=False)
    assert os.environ["SAYWHO_TEST_WEIGHTS"]  # set by conftest, inherited by the kernel

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name=KERNEL, resources={"path": str(tmp_path)}).execute()
    printed = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    site = str(python.parent.parent)
    assert f"from {site}" in printed, printed  # the kernel imported the wheel it installed
    model = "large-v3-turbo" if "model: large-v3-turbo" in printed else "base"  # GPU or CPU
    assert f"model: {model}" in printed and "fallback:" in printed
    assert "SPEAKER_00:" in printed and "SPEAKER_01:" in printed
    images = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(images) == 1
    # the result's own HTML (turns, text, the timeline inline) and a DataFrame
    pages = [
        out["data"]["text/html"]
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "text/html" in out.get("data", {})
    ]
    assert any("saywho-result" in p and "data:image/png;base64," in p for p in pages)
    assert any("probability" in p and "<table" in p and "saywho-result" not in p for p in pages)
    assert "named speakers: ['Diane', 'Sheila']" in printed
    assert "<v SPEAKER_00>" in printed  # the WebVTT voice tags
    assert (tmp_path / "timeline.png").stat().st_size > 10_000
    assert (tmp_path / "saywho_output" / "transcript.json").is_file()
    transcript = json.loads((tmp_path / "saywho_output" / "transcript.json").read_text())
    repo = WHISPER_REPOS[model].replace("/", "--")
    assert f"models--{repo}" in json.dumps(transcript)  # the model came by name, from the cache
