"""How the package under test was built, for the tests that build a wheel of
this checkout again (tests/test_dockerfile.py, tests/test_notebook.py).

A wheel built with the same build folder and CMake options as the installed
package reuses its objects: ninja finds nothing to compile, and the test
takes seconds. pyproject.toml's folder is build/py; scripts/test.sh builds
the package in its C stage's folder (build/c, with the C tests on) and says
so in SAYWHO_TEST_BUILD_ARGS, so that a clean CI run does not compile the
core, the CUDA backend (every GPU architecture) and the emulator a second
time inside pytest.
"""

from __future__ import annotations

import os
import shlex

VARIABLE = "SAYWHO_TEST_BUILD_ARGS"


def build_args() -> list[str]:
    """pip's config settings for the installed package's build folder (as
    ``-C key=value``), or none: pyproject.toml's build/py."""
    return shlex.split(os.environ.get(VARIABLE, ""))
