"""python/saywho's import structure (issues 27 and 42): one folder per role,
imports between folders pointing down only (scripts/import_graph.py's
ROLE_TIERS), no cycle, no test code in shipped modules (no import of the
checkout's tests or of a test-weights module, no SAYWHO_TEST_* variable), one module that reads the environment,
one way to the C extension, a package root that only re-exports, one
process signature, one name per threshold, relative imports inside the
package.

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
OPTIONAL_EXTRA_MODULES = {"saywho.ray", "saywho.service.server.app"}


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
    assert "saywho._internal.native" in RESULT["graph"]["saywho.api.pipeline"] or any(
        "saywho._internal.native" in d for d in RESULT["graph"].values()
    )
    assert "saywho.api.process" in RESULT["graph"]["saywho.api.pipeline"]


def test_no_import_cycle():
    assert RESULT["cycles"] == []
    assert RESULT["back_arrows"] == []


def test_no_shipped_module_imports_test_code():
    assert RESULT["test_imports"] == []
    assert RESULT["test_modules"] == []
    # the guards guard something: the scaffolding they keep out exists
    assert RESULT["missing_guards"] == []
    assert GRAPH.TEST_ONLY and all(
        (REPO / (m.replace(".", "/") + ".py")).is_file() for m in GRAPH.TEST_ONLY
    )


def test_no_shipped_module_reads_test_variables_or_the_environment():
    assert RESULT["test_variables"] == []
    assert RESULT["env_reads"] == [], "read through saywho._internal.environment"
    # the one module that does lists every variable it is asked for
    assert (PACKAGE / "_internal" / "environment.py").is_file()


def _functions(root: Path):
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path, node


def _process_option_names() -> set[str]:
    tree = ast.parse((PACKAGE / "api" / "process_options.py").read_text())
    [declaration] = [
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ProcessOptions"
    ]
    return {n.target.id for n in declaration.body if isinstance(n, ast.AnnAssign)}


def second_process_signatures(root: Path) -> list[str]:
    """Functions that take three or more of Pipeline.process's own options as
    parameters: a second declaration of them (they are ProcessOptions' fields).
    The speaker counts are left out: pyannote's diarize(num_speakers=...,
    min_speakers=..., max_speakers=...) keeps its public shape, checked by
    saywho.diarization.speaker_counts."""
    names = _process_option_names() - {"num_speakers", "min_speakers", "max_speakers"}
    found = []
    for path, node in _functions(root):
        args = node.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        if len(params & names) >= 3:
            found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    return found


def duplicated_constants(root: Path) -> dict[str, list[str]]:
    """DEFAULT_* and *THRESHOLD constants defined by more than one module (a
    threshold is named for what it thresholds, and declared once), and any
    constant called just DEFAULT_THRESHOLD."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and (
                    t.id.startswith("DEFAULT_") or t.id.endswith("THRESHOLD")
                ):
                    where.setdefault(t.id, []).append(str(path.relative_to(root.parent)))
    return {k: v for k, v in where.items() if len(v) > 1 or k == "DEFAULT_THRESHOLD"}


def test_one_process_signature():
    assert second_process_signatures(PACKAGE) == []


def test_one_name_per_threshold():
    assert duplicated_constants(PACKAGE) == {}


def test_the_package_imports_itself_relatively():
    absolute = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").split(".")[0] == "saywho"
    ]
    assert absolute == []


def test_the_structure_checks_fail_on_each_regression(tmp_path):
    """Each regression issue 42 removed, put back in a small package: the
    checks above see every one."""
    root = tmp_path / "saywho"
    (root / "models").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "models" / "__init__.py").write_text("")
    (root / "process_options.py").write_text((PACKAGE / "api" / "process_options.py").read_text())
    # a shipped module reaching for the test weights and a SAYWHO_TEST_* root
    (root / "models" / "pinned_weights.py").write_text(
        'import os\nROOT = os.environ.get("SAYWHO_TEST_WEIGHTS")\n'
    )
    (root / "models" / "hub.py").write_text("from .pinned_weights import ROOT\n")
    (root / "_internal").mkdir()
    (root / "_internal" / "memory.py").write_text(
        'from os import environ\nTEST_ROOT_ENV = "SAYWHO_TEST_MEMORY_ROOT"\n'
    )
    # a second process signature and a second DEFAULT_THRESHOLD
    (root / "api").mkdir()
    (root / "api" / "process.py").write_text(
        "DEFAULT_THRESHOLD = 0.5\n"
        "def process(pipeline, audio, *, transcribe=True, diarize=True, num_speakers=None,\n"
        "            threshold=DEFAULT_THRESHOLD, fill_nearest=True):\n"
        "    pass\n"
    )
    (root / "clustering.py").write_text("DEFAULT_THRESHOLD = 0.45\n")
    found = GRAPH.analyse(root)
    assert ["saywho.models.hub", "saywho.models.pinned_weights"] in found["test_imports"]
    assert found["test_modules"] == ["saywho.models.pinned_weights"]
    assert {m for m, _ in found["env_reads"]} == {
        "saywho._internal.memory",
        "saywho.models.pinned_weights",
    }
    assert {m for m, _ in found["test_variables"]} == {
        "saywho._internal.memory",
        "saywho.models.pinned_weights",
    }
    assert [s.split()[-1] for s in second_process_signatures(root)] == ["process"]
    assert sorted(duplicated_constants(root)["DEFAULT_THRESHOLD"]) == [
        "saywho/api/process.py",
        "saywho/clustering.py",
    ]


def test_no_module_imports_the_package_root():
    assert RESULT["root_importers"] == []


def test_only_the_loader_imports_the_extension():
    importers = sorted(m for m, deps in RESULT["graph"].items() if "saywho._core" in deps)
    assert importers == ["saywho._internal.native"]


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
    assert found["test_modules"] == ["saywho.models.test_weights"]
    assert found["cycles"] == [["saywho.a", "saywho.b"]]
    assert ["saywho.b", "saywho.a", 2] in found["hidden_imports"]
    assert ["saywho.c", "tests"] in found["test_imports"]
    assert ["saywho.d", "saywho.models.test_weights"] in found["test_imports"]
    assert found["back_arrows"]


def test_every_module_sits_in_a_folder_of_its_role():
    # a newcomer reads the role from the folder: no new module at the package
    # top (only the root, python -m saywho and the public saywho.ray), and the
    # table of roles names exactly the folders there are
    assert RESULT["unplaced"] == []
    top = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert top == ["__init__", "__main__", "ray"]
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    roles = {r for tier in GRAPH.ROLE_TIERS for r in tier if r and r != "__main__"}
    assert folders == roles


def test_imports_between_folders_point_down():
    # service > cli > api > whisper/diarization > eval > audio/formats > models > _internal
    assert RESULT["folder_arrows"] == []


def test_the_folder_checks_fail_on_a_misplaced_module_and_an_arrow_up(tmp_path):
    root = tmp_path / "saywho"
    for folder in ("api", "diarization", "whisper", "audio"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("")
    (root / "api" / "speaker_counts.py").write_text("X = 1\n")
    # the stage reaching up into the api, and one stage into the other
    (root / "diarization" / "diarize.py").write_text("from ..api.speaker_counts import X\n")
    (root / "whisper" / "words.py").write_text("from ..diarization.diarize import X\n")
    (root / "audio" / "decode.py").write_text("Y = 2\n")
    # a module left at the top, as the flat package had 33
    (root / "wer.py").write_text("from .audio.decode import Y\n")
    found = GRAPH.analyse(root)
    assert found["unplaced"] == ["saywho.wer"]
    assert found["folder_arrows"] == [
        ["saywho.diarization.diarize", "saywho.api.speaker_counts"],
        ["saywho.whisper.words", "saywho.diarization.diarize"],
    ]
    assert found["cycles"] == [] and found["back_arrows"] == []
