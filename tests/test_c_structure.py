"""The C core's structure (issue 42), the counterpart of test_import_structure.py:
the op layer and the models ask a backend's capabilities, never its kind; only
the CPU backend and the device opener include csrc/runtime/cpu/ headers; the
units of csrc/runtime call each other without a cycle; every backend table
names its slots in backend.h's order; Whisper's compute types are listed in
csrc/whisper/whisper_compute.c alone (the extension and Python read that list);
the extension's module.c only lists its parts and defines nothing they share;
no source file is named "align" but the speaker assignment's, none "optional";
SileroModel stays in python/ext/py_vad.c (each network type in its role's
file); the design doc is named docs/design.md everywhere.

Read from the sources by scripts/c_structure.py (nothing is built). Each rule
is also shown failing on a copy of the tree with its regression put back.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _checker():
    spec = importlib.util.spec_from_file_location(
        "c_structure", REPO / "scripts" / "c_structure.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHECK = _checker()


def test_the_op_layer_never_asks_a_backend_its_kind():
    assert CHECK.kind_comparisons(REPO) == []


def test_only_the_cpu_backend_and_the_opener_include_cpu_headers():
    assert CHECK.cpu_includes(REPO) == []


def test_no_include_cycle_in_the_runtime():
    assert CHECK.include_cycles(REPO) == []


def test_backend_tables_name_every_slot_in_order():
    assert CHECK.unnamed_slots(REPO) == []


def test_both_backend_tables_and_every_slot_are_seen():
    # the slot rule reads both tables and all of backend.h's slots, so it
    # cannot pass by finding nothing
    slots = CHECK.backend_slots(REPO)
    assert slots[:3] == ["abi", "kind", "name"] and "destroy" in slots
    assert {"matmul", "supports", "search_step", "graph_launch"} <= set(slots)
    for path in ("csrc/runtime/cpu/backend_cpu.c", "cuda/backend_cuda.cu"):
        text = (REPO / path).read_text()
        assert "sw_backend" in text and all(f".{s} =" in text for s in slots), path


def test_compute_types_are_listed_in_one_place():
    assert CHECK.compute_type_lists(REPO) == []
    # the rule reads the core's list, so it cannot pass by knowing no name
    assert CHECK.compute_type_names(REPO) == [
        "float32",
        "int8",
        "float16",
        "bfloat16",
        "int8_float16",
    ]


def test_the_extension_module_only_lists_its_parts():
    assert CHECK.module_definitions(REPO) == []
    # the rule reads py_common.h's shared names, so it cannot pass by knowing none
    shared = CHECK.extension_shared_names(REPO)
    assert {"SwOptionError", "swpy_raise", "swpy_init_errors", "swpy_init_audio"} <= set(shared)
    assert "swpy_type_free" not in shared  # static inline: each part's own copy


def test_one_word_one_meaning_in_file_names():
    assert CHECK.misleading_names(REPO) == []
    # the rule leaves the speaker assignment's own "align" files alone
    assert all((REPO / home).exists() for home in CHECK.ALIGN_HOMES)


def test_each_network_type_stays_in_its_file():
    assert CHECK.model_type_homes(REPO) == []


def test_the_design_doc_is_named_as_it_is():
    assert CHECK.design_doc_names(REPO) == []
    # the rule reads the docs and the tests too, so it cannot pass by reading nothing
    assert (REPO / "docs/design.md").is_file()
    assert all((REPO / folder).is_dir() for folder in ("docs", "tests", "scripts", "csrc"))


@pytest.fixture
def tree(tmp_path):
    """A copy of the C sources and the docs that a regression may be written into."""
    for folder in ("csrc", "cuda", "python/ext", "docs"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(
        REPO / "python/saywho",
        tmp_path / "python/saywho",
        ignore=shutil.ignore_patterns("data", "__pycache__"),
    )
    return tmp_path


def _edit(root: Path, path: str, old: str, new: str) -> None:
    target = root / path
    text = target.read_text()
    assert old in text, f"{path} no longer holds {old!r}: update this test"
    target.write_text(text.replace(old, new, 1))


OLD_DESIGN_DOC = "design".upper() + ".md"

REGRESSIONS = {
    "kind in ops.c": (
        "csrc/runtime/ops.c",
        "static sw_status need_f32(",
        "static int on_cpu(const sw_backend *be)\n{\n    return be->kind == SW_DEVICE_CPU;\n}\n\n"
        "static sw_status need_f32(",
        "kind_comparisons",
    ),
    "cpu header in selfcheck.c": (
        "csrc/runtime/selfcheck.c",
        '#include "cpu_backend.h"',
        '#include "cpu/cpu_workers.h"',
        "cpu_includes",
    ),
    "bare cpu header in the extension": (
        "python/ext/py_cpu.c",
        '#include "cpu_backend.h"',
        '#include "cpu_backend.h"\n#include "amx.h"',
        "cpu_includes",
    ),
    "a kernel unit calling back into the backend": (
        "csrc/runtime/cpu/cpu_affine_relu.c",
        '#include "cpu_workers.h"',
        '#include "cpu_workers.h"\n#include "cpu_fused_entries.h"',
        "include_cycles",
    ),
    "a positional slot": (
        "cuda/backend_cuda.cu",
        ".abi = SW_BACKEND_ABI,",
        "SW_BACKEND_ABI,",
        "unnamed_slots",
    ),
    "slots out of order": (
        "csrc/runtime/cpu/backend_cpu.c",
        '    .kind = SW_DEVICE_CPU,\n    .name = "cpu",',
        '    .name = "cpu",\n    .kind = SW_DEVICE_CPU,',
        "unnamed_slots",
    ),
    "compute types listed again in the extension": (
        "python/ext/py_whisper.c",
        "    sw_whisper_compute compute;\n",
        '    static const char *const names[] = {"float32", "int8", "float16"};\n'
        "    sw_whisper_compute compute;\n",
        "compute_type_lists",
    ),
    "compute types listed again in Python": (
        "python/saywho/whisper/compute_types.py",
        'NOT_BUILT = _TABLE["not_built"]\n',
        'NOT_BUILT = _TABLE["not_built"]\nCPU_COMPUTE_TYPES = ("float32", "int8", "bfloat16")\n',
        "compute_type_lists",
    ),
    "a compute-type dict in Python": (
        "python/saywho/whisper/compute_types.py",
        'NOT_BUILT = _TABLE["not_built"]\n',
        'NOT_BUILT = _TABLE["not_built"]\n_RESOLVED = {\n    "default": "float32",\n'
        '    "auto": "int8",\n}\n',
        "compute_type_lists",
    ),
    "an exception class defined in module.c again": (
        "python/ext/module.c",
        "static int exec_module(PyObject *m)",
        "PyObject *SwOptionError;\n\nstatic int exec_module(PyObject *m)",
        "module_definitions",
    ),
    "a shared helper defined in module.c again": (
        "python/ext/module.c",
        "static int exec_module(PyObject *m)",
        "PyObject *swpy_raise(const sw_error *err,\n                     const char *context)\n"
        "{\n    return NULL;\n}\n\nstatic int exec_module(PyObject *m)",
        "module_definitions",
    ),
    # the old capitalised name (OLD_DESIGN_DOC, so that this file does not hold it)
    "the design doc's old name in the README": (
        "README.md",
        "(docs/design.md)",
        f"({OLD_DESIGN_DOC})",
        "design_doc_names",
    ),
    "the design doc's old name in a source comment": (
        "csrc/runtime/ops.c",
        "static sw_status need_f32(",
        f"/* see {OLD_DESIGN_DOC} */\nstatic sw_status need_f32(",
        "design_doc_names",
    ),
}


@pytest.mark.parametrize("regression", sorted(REGRESSIONS))
def test_each_rule_finds_its_regression(tree, regression):
    path, old, new, rule = REGRESSIONS[regression]
    assert getattr(CHECK, rule)(tree) == []
    _edit(tree, path, old, new)
    found = getattr(CHECK, rule)(tree)
    assert found, f"{rule} missed: {regression}"
    rules = (
        "kind_comparisons",
        "cpu_includes",
        "unnamed_slots",
        "compute_type_lists",
        "module_definitions",
        "misleading_names",
        "model_type_homes",
        "design_doc_names",
    )
    others = {r for r in rules if r != rule}
    assert all(getattr(CHECK, r)(tree) == [] for r in others)


# Issue 42's names put back: each file under the name it had.
OLD_NAMES = {
    "python/saywho/whisper/word_dtw.py": "python/saywho/whisper/alignment.py",
    "csrc/whisper/whisper_word_attention.c": "csrc/whisper/whisper_align.c",
    "csrc/runtime/fused_ops.h": "csrc/runtime/optional_ops.h",
    "csrc/runtime/cpu/cpu_fused_entries.c": "csrc/runtime/cpu/cpu_optional.c",
}


@pytest.mark.parametrize("now", sorted(OLD_NAMES))
def test_an_old_name_put_back_is_found(tree, now):
    assert CHECK.misleading_names(tree) == []
    (tree / now).rename(tree / OLD_NAMES[now])
    found = CHECK.misleading_names(tree)
    assert [f.split(":")[0] for f in found] == [OLD_NAMES[now]]


def test_silero_put_back_beside_the_diarization_networks_is_found(tree):
    """SileroModel lived in py_diar.c until issue 42 gave the VAD its own file."""
    assert CHECK.model_type_homes(tree) == []
    vad = tree / "python/ext/py_vad.c"
    diar = tree / "python/ext/py_diar.c"
    diar.write_text(diar.read_text() + "\n" + vad.read_text())
    vad.unlink()
    found = CHECK.model_type_homes(tree)
    assert any(f.startswith("python/ext/py_diar.c:") and "SileroModel" in f for f in found)
    assert "python/ext/py_vad.c: SileroModel is not defined in its own file" in found


def test_a_network_type_in_a_third_file_is_found(tree):
    (tree / "python/ext/py_vad_extra.c").write_text('SWPY_KIND(silero2, "SileroModel")\n')
    found = CHECK.model_type_homes(tree)
    assert [f.split(":")[0] for f in found] == ["python/ext/py_vad_extra.c"]
