#!/usr/bin/env bash
# Builds the saywho wheel into dist/ and checks what it holds: the extension,
# the CUDA backend library (when nvcc was found) and the bundled sample, and
# that the CUDA library needs no CUDA library at link time.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf dist && mkdir -p dist
python3 -m pip wheel -q --no-deps --no-build-isolation -w dist .
wheel=$(ls dist/saywho-*.whl)
echo "built $wheel"
python3 - "$wheel" <<'PY'
import subprocess, sys, tempfile, zipfile, shutil
names = zipfile.ZipFile(sys.argv[1]).namelist()
for must in ("saywho/__init__.py", "saywho/data/two_speakers.wav"):
    assert must in names, f"{must} missing from the wheel"
assert any(n.startswith("saywho/_core") and n.endswith(".so") for n in names), "no extension"
cuda = [n for n in names if n.endswith("libsaywho_cuda.so")]
if shutil.which("nvcc"):
    assert cuda, "nvcc is present but the wheel has no libsaywho_cuda.so"
    with tempfile.TemporaryDirectory() as d:
        path = zipfile.ZipFile(sys.argv[1]).extract(cuda[0], d)
        needed = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
        bad = [l for l in needed.splitlines() if "NEEDED" in l and ("cudart" in l or "cublas" in l)]
        assert not bad, f"the CUDA backend links a CUDA library: {bad}"
print("wheel contents: ok", "(with CUDA backend)" if cuda else "(CPU only)")
PY
