"""notebooks/colab_quickstart.ipynb runs headless, top to bottom, on the CPU
with the test weights; any cell that raises fails the test."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "colab_quickstart.ipynb"


def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SAYWHO_MODEL", raising=False)
    assert os.environ["SAYWHO_TEST_WEIGHTS"]  # set by conftest, inherited by the kernel
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"path": str(tmp_path)}
    ).execute()
    printed = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    assert "SPEAKER_00:" in printed and "SPEAKER_01:" in printed
    assert "fallback:" in printed
    images = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(images) == 1
    assert (tmp_path / "timeline.png").stat().st_size > 10_000
    assert (tmp_path / "saywho_output" / "transcript.json").is_file()
