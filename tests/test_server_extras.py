"""pip install 'saywho[server,test]' is enough to run the server's tests:
every package they import is one the two extras list (issue 41: openai
stopped bringing httpx, and no extra named it)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# import name -> distribution name, where they differ
DISTRIBUTIONS = {"python_multipart": "python-multipart", "yaml": "pyyaml"}


def _extras() -> dict[str, set[str]]:
    if sys.version_info < (3, 11):
        pytest.fail("reading pyproject.toml needs tomllib (Python 3.11)")
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = lambda specs: {re.split(r"[<>=!~\[ ;]", s, maxsplit=1)[0].lower() for s in specs}  # noqa: E731
    extras = {k: names(v) for k, v in project["optional-dependencies"].items()}
    extras[""] = names(project["dependencies"])
    return extras


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_server_tests_need_only_the_server_and_test_extras():
    extras = _extras()
    allowed = extras[""] | extras["server"] | extras["test"] | {"saywho"}
    files = [REPO / "tests" / "server_process.py", *sorted(REPO.glob("tests/test_server*.py"))]
    assert len(files) >= 5
    third_party = set()
    for path in files:
        third_party |= {m for m in _imports(path) if m not in sys.stdlib_module_names}
    needed = {DISTRIBUTIONS.get(m, m).lower() for m in third_party}
    assert {"httpx", "openai", "pytest"} <= needed
    assert needed <= allowed, f"imported but in no extra: {sorted(needed - allowed)}"
