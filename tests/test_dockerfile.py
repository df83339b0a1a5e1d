"""The Dockerfile, where Docker may not be: its wheel step builds a wheel
of this checkout with the server in it, and its entry point is a command
saywho serve takes (issue 41: "docker build works where Docker exists; the
build file is tested by building its wheel step here")."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

from .package_build import build_args

REPO = Path(__file__).resolve().parents[1]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    text = (REPO / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        if line.strip():
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_the_wheel_step_builds_a_wheel_with_the_server(tmp_path):
    runs = [args for word, args in instructions() if word == "RUN" and " wheel " in args]
    assert len(runs) == 1, runs
    command = shlex.split(runs[0])
    assert command[:2] == ["/opt/build/bin/pip", "wheel"] and command[-1] == "."
    wheel_dir = command[command.index("--wheel-dir") + 1]
    # this machine's pip and build packages (no download), the package's
    # build folder (tests/package_build.py); the rest as written
    command = [sys.executable, "-m", "pip", *command[1:], "--no-build-isolation", "-q"]
    command += build_args()
    command[command.index(wheel_dir)] = str(tmp_path)
    subprocess.run(command, cwd=REPO, check=True, timeout=1800)
    (wheel,) = tmp_path.glob("saywho-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "saywho/service/server/cli.py" in names and "saywho/service/server/app.py" in names
    assert any(n.startswith("saywho/_core") for n in names)


def test_the_image_runs_saywho_serve_on_the_mapped_port():
    found = dict(instructions())  # the last of each instruction wins, as in Docker
    entry = json.loads(found["ENTRYPOINT"]) + json.loads(found["CMD"])
    assert entry[:2] == ["saywho", "serve"]
    assert entry[entry.index("--host") + 1] == "0.0.0.0" and found["EXPOSE"] == "8000"
    installs = [a for w, a in instructions() if w == "RUN" and "pip install" in a]
    assert installs and "[server,hub]" in installs[-1]
    # every flag the entry point gives is one saywho serve takes
    from saywho.service.server.cli import build_parser

    args = build_parser().parse_args(entry[2:])
    assert args.port == 8000 and args.data_dir == "/data" and args.model == "base"
