"""The portable wheel (issue 10), as a user's machine sees it.

wheels/build_wheel.sh builds it in a Debian bullseye root (cached by a hash
of its inputs, so a second run only copies it); these tests then check its
platform tag with auditwheel, its size, that it installs and runs in clean
Debian roots with nothing but python3, and that pip installs it beside
Colab's torch without changing anything Colab pinned. They need root
(debootstrap, chroot, mount) and the network the first time; anything
missing fails loudly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .portable_wheel import portable_wheel
from .weights import test_weights_root

REPO = Path(__file__).resolve().parents[1]
PLATFORM_TAG = "manylinux_2_31_x86_64"

# What a Colab GPU runtime has installed (docs/design.md, "Facts about Colab"):
# torch and torchaudio 2.11 built for CUDA 12.8, their cuBLAS, and NumPy.
COLAB_PINS = {
    "torch": "2.11.0+cu128",
    "torchaudio": "2.11.0+cu128",
    "nvidia-cublas-cu12": "12.8.4.1",
}


def _run(cmd, **kw):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def wheel() -> Path:
    if os.geteuid() != 0:
        pytest.fail("the wheel tests need root: debootstrap, chroot and mount make the roots")
    return portable_wheel()


def test_one_abi3_wheel_with_the_manylinux_tag(wheel):
    assert wheel.name.endswith(f"-cp39-abi3-{PLATFORM_TAG}.whl"), wheel.name
    proc = subprocess.run(
        [sys.executable, "-m", "auditwheel", "show", str(wheel)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    shown = " ".join(proc.stdout.split())
    print(shown)
    assert f'consistent with the following platform tag: "{PLATFORM_TAG}"' in shown, shown


def test_the_wheel_carries_its_libraries_and_stays_small(wheel):
    size = wheel.stat().st_size
    print(f"{wheel.name}: {size / 1e6:.1f} MB")
    assert size < 100e6
    names = zipfile.ZipFile(wheel).namelist()
    assert "saywho/_core.abi3.so" in names
    assert "saywho/libsaywho_cuda.so" in names
    libs = [n for n in names if n.startswith("saywho.libs/") and not n.endswith("/")]
    # FFmpeg and OpenBLAS are linked into the extension; only the CUDA 12.4
    # runtime is vendored; cuBLAS is found at run time, never shipped
    assert len(libs) == 1 and re.fullmatch(
        r"saywho\.libs/libcudart-[0-9a-f]{8}\.so\.12", libs[0]
    ), libs


@pytest.mark.parametrize("suite", ["bullseye", "bookworm"])
def test_installs_and_runs_in_a_clean_debian_root(wheel, suite):
    """No FFmpeg, no BLAS, no compiler, no GPU: pip install the wheel (and
    NumPy from PyPI), then `python -m saywho` on the bundled sample."""
    weights = test_weights_root()
    if not (weights / "whisper-tiny.en" / "model.bin").is_file():
        pytest.fail(f"no test weights in {weights}: run bash scripts/fetch_test_weights.sh")
    proc = _run(["bash", "wheels/clean_room.sh", suite, str(wheel), str(weights)], timeout=1800)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("saywho 0.1.0 on CPU"), lines[0]
    said = [line for line in lines if line.startswith("[")]
    assert {line.split("] ")[1].split(":")[0] for line in said} == {"SPEAKER_00", "SPEAKER_01"}
    text = " ".join(said).lower()
    assert "new jersey" in text and "chicago" in text
    assert re.fullmatch(
        r"0\.5 min of audio in \d+\.\d min, \d+\.\dx realtime \(1 of 1 files\)", lines[-1]
    )


def _fake_installed(site: Path, name: str, version: str, requires=()):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n")
    (info / "INSTALLER").write_text("pip\n")
    (info / "RECORD").write_text("")


@pytest.mark.parametrize("numpy_version", ["2.0.2", "2.1.3"])
def test_pip_changes_nothing_colab_pinned(wheel, tmp_path, numpy_version):
    """A venv that holds what Colab installed (their metadata only: pip
    decides from that); pip's dry-run report of installing the wheel, and
    the wheel with its cuda12 extra, must list saywho and nothing else."""
    venv = tmp_path / "colab"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    pins = dict(COLAB_PINS, numpy=numpy_version)
    for name, version in pins.items():
        requires = ["torch==2.11.0"] if name == "torchaudio" else []
        _fake_installed(site, name, version, requires)
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    for extra in ("", "[cuda12]"):
        report = tmp_path / f"report{extra}.json"
        proc = subprocess.run(
            [*pip, "install", "--dry-run", "--quiet", "--report", str(report), f"{wheel}{extra}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        installs = {
            item["metadata"]["name"].lower(): item["metadata"]["version"]
            for item in json.loads(report.read_text())["install"]
        }
        assert installs == {"saywho": "0.1.0"}, (extra, installs)
    # what pip left alone is what Colab has
    listed = subprocess.run([*pip, "list", "--format=json"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    have = {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)}
    for name, version in pins.items():
        assert have[name] == version


@pytest.fixture(scope="module")
def wheel_venv(wheel, tmp_path_factory) -> str:
    """The python of a venv that holds the wheel and sees this machine's
    faster-whisper and PyAV (--system-site-packages; the wheel's saywho comes
    first)."""
    venv = tmp_path_factory.mktemp("wheel") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed"]
    proc = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    where = _run([python, "-c", "import saywho; print(saywho.__file__)"])
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr
    return python


def test_decodes_the_samples_faster_whisper_decodes(wheel_venv, tmp_path):
    """The wheel's FFmpeg (8.1.2, PyAV 18.1's) against faster_whisper.decode_audio
    on every file of tests/decode_parity.py, the 24 kHz MP3 included (the
    test install's FFmpeg 5.1 decodes that one differently:
    tests/test_decode_parity.py)."""
    proc = _run([wheel_venv, "tests/decode_parity.py", str(tmp_path)], timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = json.loads(proc.stdout)
    for name, (diff, ours, _) in found.items():
        print(f"{name}: max difference {diff:.2e}, {ours} samples")
    assert len(found) == 25 and "mp3_24000.mp3" in found
    assert all(ours == theirs for _, ours, theirs in found.values()), found
    assert max(diff for diff, _, _ in found.values()) <= 1e-4, found


def test_multilingual_transcript_equals_faster_whispers(wheel_venv, tmp_path):
    """jfk as a 24 kHz MP3 (the rate whose decoding FFmpeg changed), each
    side decoding it itself, through Whisper base at temperature 0: the
    same language and the same tokens."""
    mp3 = tmp_path / "jfk_24k.mp3"
    source = REPO / "tests" / "data" / "shared" / "jfk.wav"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", str(source), "-ar", "24000"]
        + ["-c:a", "libmp3lame", str(mp3)],
        check=True,
    )
    proc = _run([wheel_venv, "tests/transcript_parity.py", str(mp3)], timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    found = json.loads(proc.stdout)
    print(found)
    assert found["saywho"]["language"] == found["faster-whisper"]["language"] == "en"
    assert found["saywho"]["tokens"] == found["faster-whisper"]["tokens"]
    assert sum(len(t) for t in found["saywho"]["tokens"]) > 20
