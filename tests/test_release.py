"""The install path a Colab user takes: the release workflow that puts the
portable wheel and an sdist on PyPI on a version tag, and the quickstart
notebook whose first cell installs saywho from there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job["steps"]]


def test_release_runs_on_a_version_tag_and_does_every_step():
    workflow = _workflow()
    # YAML 1.1 reads the key "on" as True
    trigger = workflow.get("on", workflow.get(True))
    assert trigger == {"push": {"tags": ["v*"]}}
    jobs = workflow["jobs"]
    assert set(jobs) >= {"wheel", "sdist", "smoke", "publish", "github-release"}
    runs = "\n".join(step.get("run", "") for step in _steps(workflow))
    assert "wheels/build_wheel.sh" in runs and "build --sdist" in runs
    assert "python -m venv" in runs and "scripts/smoke_wheel.py" in runs
    # publishing: PyPI's trusted publishing (an OIDC token, no stored secret),
    # only after the smoke test, then the files attached to the tag's release
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert set(publish["needs"]) == {"wheel", "sdist", "smoke"}
    assert any(
        s.get("uses", "").startswith("pypa/gh-action-pypi-publish")
        for s in _steps({"jobs": {"publish": publish}})
    )
    assert "secrets." not in WORKFLOW.read_text(encoding="utf-8")
    release = "\n".join(s.get("run", "") for s in jobs["github-release"]["steps"])
    assert "gh release" in release and "dist/*" in release


def test_every_script_the_workflow_names_exists():
    runs = "\n".join(step.get("run", "") for step in _steps(_workflow()))
    named = set(re.findall(r"(?:wheels|scripts)/[\w./-]+\.(?:sh|py)", runs))
    assert named >= {"wheels/build_wheel.sh", "scripts/smoke_wheel.py"}
    for path in named:
        assert (ROOT / path).is_file(), path


def test_the_notebooks_first_cell_installs_saywho_and_says_what_to_do_before_a_release():
    notebook = json.loads((ROOT / "notebooks" / "colab_quickstart.ipynb").read_text())
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    first = "".join(code[0]["source"])
    assert "pip install saywho" in first
    assert '"saywho[plot,hub]"' in first  # what pip is given when nothing else is named
    assert "subprocess.check_call" in first and '"pip", "install"' in first
    until = [line for line in first.splitlines() if line.startswith("# Until")]
    assert len(until) == 1 and "wheel" in until[0] and "PACKAGE" in until[0]
