"""The import graph of python/saywho, read from the sources with ast (nothing is imported).

Prints the folders by role (ROLE_TIERS, top to bottom) and the imports
between folders that point up or sideways, the modules in layers (a module's
layer is one above the highest layer it imports; modules in a cycle share
one), the arrows that point back up
(from a lower layer to a higher one: there are none unless a cycle exists),
the cycles, the imports hidden inside functions, the imports of the package
root or of test code, the reads of the environment outside
saywho._internal.environment and the test-only variables (SAYWHO_TEST_*) shipped code
names. ``--json`` prints the same as one object.

    python scripts/import_graph.py            # the report
    python scripts/import_graph.py --json     # for tests and notes

Only imports between saywho's own modules count. An import under
``if TYPE_CHECKING:`` is left out: it never runs.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

PACKAGE = "saywho"
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "python" / PACKAGE
# the test package of the checkout: shipped code must not import it
TESTS = "tests"
# the checkout's test scaffolding that shipped code once reached for (the
# test weights' layout, the memory figures' root): each must exist, under
# tests/, or this guard guards nothing
TEST_ONLY = ("tests.weights", "tests.conftest")
# names of test scaffolding that must never be a module of the package
TEST_ONLY_NAMES = ("pinned_weights", "test_weights")
# the one module that reads the process environment
ENVIRONMENT = f"{PACKAGE}._internal.environment"
TEST_VARIABLE_PREFIX = "SAYWHO_TEST_"


# The package by role (issue 42), top to bottom: an import between two of
# these folders points down this list, never up and never sideways (whisper
# and diarization, audio and formats know nothing of each other). Inside one
# folder the order is the layers'. Every module is in one folder: a new
# module at the package top is reported, not silently placed.
ROLE_TIERS: tuple[tuple[str, ...], ...] = (
    ("",),  # the package root: re-exports only
    ("__main__",),  # python -m saywho
    ("service",),  # saywho serve, saywho batch, and their Ray engine (saywho.ray)
    ("cli",),  # the command line
    ("api",),  # Pipeline, process, Result and the steps process adds
    ("whisper", "diarization"),  # the two stages
    ("eval",),  # scoring against references
    ("audio", "formats"),  # samples in, results out
    ("models",),  # checkpoint readers, resolution by name
    ("_internal",),  # the extension's loader, devices, memory, timing, environment
)
# modules at the top that belong to a folder's role: saywho.ray is the
# service's Ray engine, kept at the top because users import it by that name;
# the extensions (_core, and _dispatch where the build has it: the small one
# that reads SAYWHO_CPU_DISPATCH before _core loads) are reached only from
# _internal/
SAME_ROLE = {"ray": "service", "_core": "_internal", "_dispatch": "_internal"}


def role_of(module: str) -> str | None:
    """The folder (role) a module of the package belongs to; None for a module
    at the package top that is not one of the roles."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    head = parts[1] if len(parts) > 1 else ""
    if head in SAME_ROLE:
        return SAME_ROLE[head]
    return head if any(head in tier for tier in ROLE_TIERS) else None


def tier_of(role: str) -> int:
    for i, tier in enumerate(ROLE_TIERS):
        if role in tier:
            return i
    raise KeyError(role)


def folder_arrows(graph: dict[str, set[str]]) -> tuple[list[list[str]], list[str]]:
    """(imports from one role's folder to another's that point up or sideways
    in ROLE_TIERS, modules in no role's folder)."""
    wrong, unplaced = [], []
    for src, deps in sorted(graph.items()):
        role = role_of(src)
        if role is None:
            unplaced.append(src)
            continue
        for dst in sorted(deps):
            other = role_of(dst)
            if other is None or other == role:
                continue
            if tier_of(other) <= tier_of(role):
                wrong.append([src, dst])
    return wrong, unplaced


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every .py under ``root`` (the package folder)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


# the C extension: a module with no Python source, imported like any other
EXTENSION = f"{PACKAGE}._core"
# the small extension that reads SAYWHO_CPU_DISPATCH before _core loads
DISPATCH_EXTENSION = f"{PACKAGE}._dispatch"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a relative ``from ... import`` names."""
    if node.level == 0:
        return node.module or ""
    base = name.split(".") if is_package else name.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, int, bool]]:
    """(imported saywho module, line, hidden inside a function) for each import in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found: list[tuple[str, int, bool]] = []

    def target(module: str, member: str | None) -> str | None:
        # "from saywho.x import y" imports saywho.x.y when y is a submodule
        if member and f"{module}.{member}" in known:
            return f"{module}.{member}"
        while module and module not in known:
            module = module.rpartition(".")[0]
        return module or None

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, in_function)
                continue
            inner = in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            )
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == TESTS:
                        found.append((TESTS, child.lineno, in_function))
                    if alias.name.split(".")[0] == PACKAGE:
                        mod = target(alias.name, None)
                        if mod:
                            found.append((mod, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                module = _resolve(name, is_package, child)
                if module.split(".")[0] == TESTS:
                    found.append((TESTS, child.lineno, in_function))
                if module.split(".")[0] != PACKAGE:
                    continue
                for alias in child.names:
                    mod = target(module, alias.name)
                    if mod:
                        found.append((mod, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return sorted({f for f in found if f[0] != name})


def environment_uses(path: Path) -> tuple[list[int], list[int]]:
    """(lines reading the environment: os.environ, os.getenv, os.putenv;
    lines naming a SAYWHO_TEST_* variable) in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    reads, test_names = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv"):
            reads.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            if any(a.name in ("environ", "getenv", "putenv") for a in node.names):
                reads.append(node.lineno)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if TEST_VARIABLE_PREFIX in node.value:
                test_names.append(node.lineno)
    return sorted(set(reads)), sorted(set(test_names))


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components, each sorted; only those that are cycles (size > 1)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(out)


def layers(graph: dict[str, set[str]], cycles: list[list[str]]) -> dict[str, int]:
    """Layer 0 imports nothing of saywho; a cycle's members share one layer."""
    group = {m: tuple(c) for c in cycles for m in c}
    layer: dict[str, int] = {}

    def of(m: str, seen: frozenset = frozenset()) -> int:
        if m in layer:
            return layer[m]
        members = group.get(m, (m,))
        deps = {d for x in members for d in graph[x]} - set(members)
        level = 1 + max((of(d, seen | {m}) for d in deps), default=-1)
        for x in members:
            layer[x] = level
        return level

    for m in sorted(graph):
        of(m)
    return layer


def analyse(root: Path = DEFAULT_ROOT) -> dict:
    names = module_names(root)
    known = set(names) | {EXTENSION, DISPATCH_EXTENSION}
    edges: dict[str, list[tuple[str, int, bool]]] = {
        n: imports_of(n, p, known) for n, p in names.items()
    }
    test_imports = sorted((src, dst) for src, e in edges.items() for dst, _, _ in e if dst == TESTS)
    test_imports += sorted(
        (src, dst)
        for src, e in edges.items()
        for dst, _, _ in e
        if dst.rpartition(".")[2] in TEST_ONLY_NAMES
    )
    test_modules = sorted(n for n in names if n.rpartition(".")[2] in TEST_ONLY_NAMES)
    checkout = root.resolve().parents[1]
    missing_guards = [
        m for m in TEST_ONLY if not (checkout / (m.replace(".", "/") + ".py")).is_file()
    ]
    env_reads, test_variables = [], []
    for n, path in names.items():
        reads, test_names = environment_uses(path)
        if n != ENVIRONMENT:
            env_reads += [[n, line] for line in reads]
        test_variables += [[n, line] for line in test_names]
    edges = {n: [x for x in e if x[0] != TESTS] for n, e in edges.items()}
    graph = {n: {t for t, _, _ in e} for n, e in edges.items()}
    graph[EXTENSION] = set()
    graph[DISPATCH_EXTENSION] = set()
    # a package's submodule importing its own package's __init__ is an arrow
    # up like any other; the import of a package by its parent is not implied
    cycles = strongly_connected(graph)
    layer = layers(graph, cycles)
    back = sorted(
        (src, dst) for src, deps in graph.items() for dst in deps if layer[dst] >= layer[src]
    )
    hidden = sorted((src, dst, line) for src, e in edges.items() for dst, line, inner in e if inner)
    root_importers = sorted(
        {src for src, e in edges.items() for dst, _, _ in e if dst == PACKAGE and src != PACKAGE}
    )
    wrong_folders, unplaced = folder_arrows(graph)
    by_layer: dict[int, list[str]] = {}
    for m, level in layer.items():
        by_layer.setdefault(level, []).append(m)
    return {
        "modules": len(graph),
        "arrows": sum(len(d) for d in graph.values()),
        "layers": {str(k): sorted(v) for k, v in sorted(by_layer.items())},
        "back_arrows": [list(b) for b in back],
        "folder_arrows": wrong_folders,
        "unplaced": unplaced,
        "cycles": cycles,
        "hidden_imports": [list(h) for h in hidden],
        "root_importers": root_importers,
        "test_imports": [list(t) for t in test_imports],
        "test_modules": test_modules,
        "missing_guards": missing_guards,
        "env_reads": env_reads,
        "test_variables": test_variables,
        "graph": {k: sorted(v) for k, v in sorted(graph.items())},
    }


def report(result: dict) -> str:
    lines = [
        f"{result['modules']} modules, {result['arrows']} import arrows, "
        f"{len(result['layers'])} layers, {len(result['back_arrows'])} arrows pointing back up, "
        f"{len(result['folder_arrows'])} arrows up or sideways between folders, "
        f"{len(result['unplaced'])} modules in no folder, "
        f"{len(result['cycles'])} cycles ({sum(len(c) for c in result['cycles'])} modules in "
        f"them), {len(result['hidden_imports'])} imports inside functions, "
        f"{len(result['root_importers'])} modules importing the package root, "
        f"{len(result['test_imports'])} imports of test code, "
        f"{len(result['env_reads'])} environment reads outside {ENVIRONMENT}, "
        f"{len(result['test_variables'])} test-only variables named",
        "",
        "folders, top to bottom (an import between folders points down): "
        + " > ".join("/".join(r or "saywho" for r in tier) for tier in ROLE_TIERS),
        "",
        "layers (0 imports nothing of saywho):",
    ]
    for level, mods in result["layers"].items():
        lines.append(f"  {level:>2}: {' '.join(m.removeprefix(PACKAGE + '.') for m in mods)}")
    for title, rows in (
        ("arrows pointing back up", result["back_arrows"]),
        ("arrows up or sideways between folders (ROLE_TIERS)", result["folder_arrows"]),
        ("modules in no folder of ROLE_TIERS", [[m] for m in result["unplaced"]]),
        ("cycles", result["cycles"]),
        ("imports inside functions (module -> module, line)", result["hidden_imports"]),
        ("modules importing the package root", [[m] for m in result["root_importers"]]),
        ("imports of test code", result["test_imports"]),
        ("test scaffolding modules in the package", [[m] for m in result["test_modules"]]),
        ("guarded test modules that no longer exist", [[m] for m in result["missing_guards"]]),
        (f"environment reads outside {ENVIRONMENT} (module, line)", result["env_reads"]),
        ("test-only variables named (module, line)", result["test_variables"]),
    ):
        lines.append("")
        lines.append(f"{title}: {len(rows)}")
        lines.extend("  " + " -> ".join(str(x) for x in row) for row in rows)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the package folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = analyse(args.root)
    print(json.dumps(result, indent=1) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
