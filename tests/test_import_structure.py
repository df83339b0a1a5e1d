"""python/saywho's import structure (issue 27): no cycle, no test code in shipped
modules, one way to the C extension, and a package root that only re-exports.

The graph is read from the sources by scripts/import_graph.py (ast, nothing
imported), so a cycle fails here even where import order happens to hide it.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "python" / "saywho"

# The only modules a function may import lazily: each needs an optional extra
# (saywho[ray], saywho[server]) at its top, and the command line must start
# without it.
OPTIONAL_EXTRA_MODULES = {"saywho.ray", "saywho.server.app"}


def _import_graph():
    spec = importlib.util.spec_from_file_location(
        "import_graph", REPO / "scripts" / "import_graph.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GRAPH = _import_graph()
RESULT = GRAPH.analyse(PACKAGE)


def test_the_graph_has_the_package():
    # guards the rest against an empty read: these modules exist and import each other
    assert RESULT["modules"] > 50
    assert "saywho.native" in RESULT["graph"]["saywho.pipeline"] or any(
        "saywho.native" in d for d in RESULT["graph"].values()
    )
    assert "saywho.process" in RESULT["graph"]["saywho.pipeline"]


def test_no_import_cycle():
    assert RESULT["cycles"] == []
    assert RESULT["back_arrows"] == []


def test_no_shipped_module_imports_test_code():
    assert RESULT["test_imports"] == []
    assert not (PACKAGE / "models" / "test_weights.py").exists()


def test_no_module_imports_the_package_root():
    assert RESULT["root_importers"] == []


def test_only_the_loader_imports_the_extension():
    importers = sorted(m for m, deps in RESULT["graph"].items() if "saywho._core" in deps)
    assert importers == ["saywho.native"]


def test_function_level_imports_only_for_optional_extras():
    lazy = {(src, dst) for src, dst, _ in RESULT["hidden_imports"]}
    assert {dst for _, dst in lazy} <= OPTIONAL_EXTRA_MODULES, sorted(lazy)


def test_the_package_root_only_re_exports():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        targets = [t.id for t in node.targets] if isinstance(node, ast.Assign) else []
        assert targets in (["__version__"], ["__all__"]), ast.dump(node)[:200]


def test_the_detector_finds_a_cycle_and_a_test_import(tmp_path):
    # the checks above can fail: a package with a -> b -> a and a test import
    root = tmp_path / "saywho"
    (root / "models").mkdir(parents=True)
    (root / "__init__.py").write_text("from .a import x\n")
    (root / "a.py").write_text("from .b import y\nx = 1\n")
    (root / "b.py").write_text("def y():\n    from .a import x\n    return x\n")
    (root / "c.py").write_text("from saywho import a\nfrom tests.weights import test_model_dir\n")
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "test_weights.py").write_text("")
    (root / "d.py").write_text("from .models.test_weights import z\nfrom . import native\n")
    found = GRAPH.analyse(root)
    assert found["cycles"] == [["saywho.a", "saywho.b"]]
    assert ["saywho.b", "saywho.a", 2] in found["hidden_imports"]
    assert ["saywho.c", "tests"] in found["test_imports"]
    assert ["saywho.d", "saywho.models.test_weights"] in found["test_imports"]
    assert found["back_arrows"]
