"""The structure rules of the C core, read from the sources as text (nothing is built).

The C counterpart of scripts/import_graph.py. It reports what breaks the
layering that docs/architecture.md describes:

- a comparison with a backend's kind (``kind ==``, ``== SW_DEVICE_CPU``) in
  csrc/ outside the backends (csrc/runtime/cpu/, cuda/) and the device opener
  (csrc/runtime/device.c): the op layer and the models ask ``supports``;
- an include of a csrc/runtime/cpu/ header from outside that folder (the
  opener excepted): the rest of the core reaches the CPU backend through
  csrc/runtime/cpu_backend.h;
- an include cycle between the units of csrc/runtime (a unit is x.c with
  x.h; an arrow is an include that a .c file writes of another unit's
  header: what its code calls. A header's own includes bring types and
  are left out, so backend.h naming tensor.h's types is no arrow back);
- a backend table (``sw_backend NAME = {``) with a slot not written as
  ``.slot = value``, or slots out of backend.h's order;
- a list of Whisper's compute-type names (two or more of them as string
  literals in one run of literals, as an array, tuple or dict writes them)
  anywhere but csrc/whisper/whisper_compute.c, which the core and Python
  (through _core.compute_types) read; the names are read from that file;
- a name py_common.h declares for every part of the extension (an exception
  class, a helper, an init function) defined in python/ext/module.c: that
  file only calls the parts' swpy_init_*, so no part calls back into it
  (the shared helpers are py_helpers.c's);
- a source file of csrc/, cuda/, python/ext/ or python/saywho/ named with a
  word that meant two things, or nothing: "align" outside the speaker
  assignment's own files (csrc/align/, python/ext/py_align.c, its C test),
  since word timing is whisper/word_timing.py, whisper/word_dtw.py and
  csrc/whisper/whisper_word_attention.c; "optional" anywhere, since the
  backend table's fused entries are runtime/fused_ops.c and
  cpu/cpu_fused_entries.c (docs/alignment.md, docs/architecture.md);
- a network type of the extension defined outside the file of its role
  (SileroModel, the VAD, is python/ext/py_vad.c's and no other's; the
  diarization networks py_diar.c's; WhisperModel py_whisper.c's), or
  missing from it;
- the design doc named in capitals, as it was before it became
  docs/design.md, anywhere in the docs, the sources, the tests and the
  build files.

    python scripts/c_structure.py          # the report; exit status 1 on a finding
    python scripts/c_structure.py --json   # the same as one object
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("csrc/runtime/cpu/", "cuda/")
OPENER = "csrc/runtime/device.c"
CPU_DIR = "csrc/runtime/cpu/"
COMPUTE_TYPES_HOME = "csrc/whisper/whisper_compute.c"
EXT_MODULE = "python/ext/module.c"
EXT_SHARED_HEADER = "python/ext/py_common.h"
SOURCE_SUFFIXES = (".c", ".h", ".cu", ".cpp")
# "align" is the speaker assignment's word (docs/alignment.md): its homes
ALIGN_HOMES = ("csrc/align/", "python/ext/py_align.c", "csrc/tests/test_align.c")
NAMED_FOLDERS = ("csrc", "cuda", "python/ext", "python/saywho")
# each network type of the extension and the one file that defines it
MODEL_TYPE_HOMES = {
    "SileroModel": "python/ext/py_vad.c",
    "SegmentationModel": "python/ext/py_diar.c",
    "CamppModel": "python/ext/py_diar.c",
    "ResNet34Model": "python/ext/py_diar.c",
    "GE2EModel": "python/ext/py_diar.c",
    "WhisperModel": "python/ext/py_whisper.c",
}
# where the design doc is named: every folder and top-level file of text
DOC_FOLDERS = (
    "docs",
    "csrc",
    "cuda",
    "python",
    "scripts",
    "bench",
    "tests",
    "wheels",
    "notebooks",
    "cmake",
    ".ci",
    ".github",
)
DOC_FILES = ("README.md", "CMakeLists.txt", "pyproject.toml", "Dockerfile")
TEXT_SUFFIXES = (
    *SOURCE_SUFFIXES,
    ".py",
    ".md",
    ".sh",
    ".txt",
    ".toml",
    ".cmake",
    ".yml",
    ".yaml",
    ".cfg",
    ".ipynb",
    ".map",
)

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_KIND = re.compile(r"\bkind\s*[!=]=|[!=]=\s*SW_DEVICE_\w+|\bSW_DEVICE_\w+\s*[!=]=")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_TABLE = re.compile(r"\bsw_backend\s+\w+\s*=\s*\{(.*?)\n\};", re.S)
# string literals: C's, and Python's single-line ones too
_C_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"')
_PY_LITERAL = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'")
# a type's definition: SWPY_KIND's name, or a PyType_Spec's "saywho._core.X"
_MODEL_TYPE = re.compile(
    r'\bSWPY_KIND\(\s*\w+\s*,\s*"(\w+)"|\bPyType_Spec\s+\w+\s*=\s*\{\s*"saywho\._core\.(\w+)"'
)
_DESIGN_DOC = re.compile(r"\bDESIGN\.md\b")
_PY_COMMENT = re.compile(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|#[^\n]*')


def _code(text: str) -> str:
    """The text without comments, line breaks kept (so line numbers hold)."""
    return _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _sources(root: Path, *folders: str) -> list[Path]:
    found = []
    for folder in folders:
        base = root / folder
        if base.is_dir():
            found += [p for p in sorted(base.rglob("*")) if p.suffix in SOURCE_SUFFIXES]
    return found


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def kind_comparisons(root: Path) -> list[str]:
    """'file:line: text' for each comparison with a backend's kind outside
    the backends and the device opener."""
    found = []
    for path in _sources(root, "csrc"):
        rel = _rel(root, path)
        if rel.startswith(BACKENDS) or rel == OPENER or rel.startswith("csrc/tests/"):
            continue
        for n, line in enumerate(_code(path.read_text()).splitlines(), 1):
            if _KIND.search(_STRING.sub('""', line)):
                found.append(f"{rel}:{n}: {line.strip()}")
    return found


def cpu_includes(root: Path) -> list[str]:
    """'file:line: include' for each include of a cpu/ header from outside
    csrc/runtime/cpu/ (the opener excepted). Only cpu/'s own files and the C
    tests have cpu/ on their include path (CMakeLists.txt); a bare name of a
    cpu/ header counts as well, so adding the path back cannot hide one."""
    cpu_headers = {p.name for p in (root / CPU_DIR).glob("*.h")}
    found = []
    for path in _sources(root, "csrc", "cuda", "python/ext"):
        rel = _rel(root, path)
        if rel.startswith((CPU_DIR, "csrc/tests/")) or rel == OPENER:
            continue  # the C tests of the CPU kernels test them directly
        text = _code(path.read_text())
        for m in _INCLUDE.finditer(text):
            name = m.group(1)
            if name.startswith(("cpu/", "../cpu/")) or Path(name).name in cpu_headers:
                line = text.count("\n", 0, m.start()) + 1
                found.append(f'{rel}:{line}: #include "{name}"')
    return found


def include_cycles(root: Path, folder: str = "csrc/runtime") -> list[list[str]]:
    """The include cycles between units of `folder` (x.c and x.h are one unit,
    named by its path without the suffix), each a sorted list of units."""
    headers: dict[str, list[str]] = {}
    units = set()
    for path in _sources(root, folder):
        unit = _rel(root, path.with_suffix(""))
        units.add(unit)
        if path.suffix == ".h":
            headers.setdefault(path.name, []).append(unit)
    arrows: dict[str, set[str]] = {u: set() for u in units}
    for path in _sources(root, folder):
        if path.suffix == ".h":
            continue
        unit = _rel(root, path.with_suffix(""))
        base = _rel(root, path.parent)
        for name in _INCLUDE.findall(_code(path.read_text())):
            # the include's own folder first, then any header of that name
            near = f"{base}/{name[:-2]}" if name.endswith(".h") else None
            targets = [near] if near in units else headers.get(Path(name).name, [])
            arrows[unit].update(t for t in targets if t != unit)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    counter = 0
    for start in sorted(units):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(arrows[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def backend_slots(root: Path) -> list[str]:
    """The slots of struct sw_backend (csrc/runtime/backend.h), in order."""
    text = (root / "csrc/runtime/backend.h").read_text()
    start = text.index("struct sw_backend {")
    body = _code(text[start : text.index("\n};", start)])
    body = body[body.index("{") + 1 :]
    return [
        m.group(1) or m.group(2)
        for m in re.finditer(r"\(\*(\w+)\)\s*\(|^\s*[\w ]+?[\s*]+(\w+);", body, re.M)
    ]


def unnamed_slots(root: Path) -> list[str]:
    """'file: what' for each backend table with a positional slot, a name
    that is no slot, or slots out of backend.h's order."""
    slots = backend_slots(root)
    found = []
    for path in _sources(root, "csrc", "cuda"):
        rel = _rel(root, path)
        for m in _TABLE.finditer(_code(path.read_text())):
            names = []
            for entry in re.split(r",\s*\n", m.group(1).strip().rstrip(",")):
                named = re.match(r"\.(\w+)\s*=", entry.strip())
                if not named:
                    found.append(f"{rel}: positional slot {entry.strip()!r}")
                    continue
                names.append(named.group(1))
            unknown = [n for n in names if n not in slots]
            if unknown:
                found.append(f"{rel}: no such slot {', '.join(unknown)}")
            elif names != sorted(names, key=slots.index):
                found.append(f"{rel}: slots out of backend.h's order")
    return found


def compute_type_names(root: Path) -> list[str]:
    """The compute types the core computes: the literals of
    whisper_compute.c's ``computes[]`` table."""
    text = _code((root / COMPUTE_TYPES_HOME).read_text())
    table = re.search(r"\bcomputes\[\]\s*=\s*\{(.*?)\n\};", text, re.S)
    return re.findall(r'"(\w+)"', table.group(1)) if table else []


def _literal_runs(text: str, python: bool) -> list[tuple[int, list[str]]]:
    """(offset, values) of each run of string literals that only commas join
    (an initializer, a tuple), or in Python colons too (a dict; in C a colon
    joins a ternary's two values, which is no list)."""
    joiner = re.compile(r"\s*[,:]\s*" if python else r"\s*,\s*")
    runs: list[tuple[int, list[str]]] = []
    end = -1
    for m in (_PY_LITERAL if python else _C_LITERAL).finditer(text):
        value = m.group(0)[1:-1]
        if runs and joiner.fullmatch(text[end : m.start()]):
            runs[-1][1].append(value)
        else:
            runs.append((m.start(), [value]))
        end = m.end()
    return runs


def compute_type_lists(root: Path) -> list[str]:
    """'file:line: names' for each run of string literals naming two or more
    compute types outside whisper_compute.c (C sources, the extension and the
    Python package; docstrings and comments are prose, not lists)."""
    names = set(compute_type_names(root))
    paths = _sources(root, "csrc", "cuda", "python/ext")
    package = root / "python/saywho"
    if package.is_dir():
        paths += sorted(package.rglob("*.py"))
    found = []
    for path in paths:
        rel = _rel(root, path)
        if rel == COMPUTE_TYPES_HOME or rel.startswith("csrc/tests/"):
            continue
        text = path.read_text()
        python = path.suffix == ".py"
        if python:
            text = _PY_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        else:
            text = _code(text)
        for start, run in _literal_runs(text, python):
            named = [x for x in run if x in names]
            if len(set(named)) >= 2:
                line = text.count("\n", 0, start) + 1
                found.append(f"{rel}:{line}: {', '.join(named)}")
    return found


def extension_shared_names(root: Path) -> list[str]:
    """The names py_common.h declares for the parts to share: its extern
    variables and its prototypes (not its static inline functions, which
    each part compiles for itself)."""
    text = _code((root / EXT_SHARED_HEADER).read_text())
    text = re.sub(r"static inline[^{;]*\{.*?\n\}", "", text, flags=re.S)
    externs = re.findall(r"^extern\s[^;]*?\b(\w+)\s*;", text, re.M)
    prototypes = re.findall(
        r"^(?!extern|static|#|typedef)[A-Za-z_][\w \t*]*?\b(\w+)\s*\(", text, re.M
    )
    return externs + prototypes


def module_definitions(root: Path) -> list[str]:
    """'file:line: name' for each shared name (extension_shared_names) that
    python/ext/module.c defines at file scope: a definition starts a line,
    a call inside a function does not."""
    text = _code((root / EXT_MODULE).read_text())
    found = []
    for name in extension_shared_names(root):
        head = r"^[A-Za-z_][\w \t*]*?\b" + re.escape(name)
        for m in re.finditer(head + r"\s*(?:\([^;]*?\)\s*\{|(?:=[^;]*)?;)", text, re.M | re.S):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{EXT_MODULE}:{line}: {name}")
    return found


def misleading_names(root: Path) -> list[str]:
    """Source files named with a word that once meant two things ("align":
    speaker assignment and word timing) or says nothing of what the file
    holds ("optional": the fused entries)."""
    found = []
    for folder in NAMED_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (*SOURCE_SUFFIXES, ".py") or "__pycache__" in path.parts:
                continue
            rel, name = _rel(root, path), path.name.lower()
            if "align" in name and not rel.startswith(ALIGN_HOMES):
                found.append(
                    f"{rel}: 'align' names the speaker assignment alone (csrc/align/); "
                    "word timing is word_timing, word_dtw, whisper_word_attention"
                )
            if "optional" in name:
                found.append(
                    f"{rel}: 'optional' says nothing of what it holds; the fused "
                    "entries are runtime/fused_ops.c and cpu/cpu_fused_entries.c"
                )
    return found


def model_type_homes(root: Path) -> list[str]:
    """'file:line: what' for each network type (MODEL_TYPE_HOMES) defined in
    another file of python/ext than its own, and 'home: what' for one its own
    file no longer defines (so the rule cannot pass by reading nothing)."""
    found, seen = [], set()
    for path in _sources(root, "python/ext"):
        rel = _rel(root, path)
        text = _code(path.read_text())
        for m in _MODEL_TYPE.finditer(text):
            name = m.group(1) or m.group(2)
            home = MODEL_TYPE_HOMES.get(name)
            if home is None:
                continue
            if rel == home:
                seen.add(name)
            else:
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{rel}:{line}: {name} is defined here; its file is {home}")
    for name, home in MODEL_TYPE_HOMES.items():
        if name not in seen:
            found.append(f"{home}: {name} is not defined in its own file")
    return found


def design_doc_names(root: Path) -> list[str]:
    """'file:line: text' for each mention of the design doc under its old
    capitalised name; the file is docs/design.md."""
    paths = [root / name for name in DOC_FILES if (root / name).is_file()]
    for folder in DOC_FOLDERS:
        base = root / folder
        if base.is_dir():
            paths += sorted(
                p
                for p in base.rglob("*")
                if p.suffix in TEXT_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
            )
    found = []
    for path in paths:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue  # not text, whatever its suffix
        for n, line in enumerate(text.splitlines(), 1):
            if _DESIGN_DOC.search(line):
                found.append(f"{_rel(root, path)}:{n}: {line.strip()} (the file is docs/design.md)")
    return found


def report(root: Path = REPO) -> dict:
    return {
        "kind_comparisons": kind_comparisons(root),
        "cpu_includes": cpu_includes(root),
        "include_cycles": include_cycles(root),
        "unnamed_slots": unnamed_slots(root),
        "compute_type_lists": compute_type_lists(root),
        "module_definitions": module_definitions(root),
        "misleading_names": misleading_names(root),
        "model_type_homes": model_type_homes(root),
        "design_doc_names": design_doc_names(root),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--root", type=Path, default=REPO)
    args = parser.parse_args()
    found = report(args.root)
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        for rule, items in found.items():
            print(f"{rule}: {len(items)}")
            for item in items:
                print(f"  {item}")
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
