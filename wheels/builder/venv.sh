#!/usr/bin/env bash
# Runs inside the bullseye builder root (build_wheel.sh chroots into it, once
# per version of this file and its inputs).
# /opt/venv: the build tools from PyPI at pinned versions.
set -euo pipefail
rm -rf /opt/venv
python3 -m venv /opt/venv
/opt/venv/bin/pip install -q --disable-pip-version-check -r /opt/src/build-requirements.txt
