"""Shared fixtures: real audio from tests/data/shared (origins and licences in its SOURCES.md).

Missing data is an error, not a skip: a test that cannot see its input must
fail loudly so CI never passes on nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Copied into the repository so a clone stands alone: nothing outside it is read.
SHARED_DATA = REPO / "tests" / "data" / "shared"
# The installed package cannot know where the checkout keeps its test weights.
os.environ.setdefault("SAYWHO_TEST_WEIGHTS", str(REPO / ".cache" / "test-weights"))


def shared_file(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.is_file():
        pytest.fail(f"test data {path} is missing: the checkout is incomplete")
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"{SHARED_DATA} is missing: the checkout is incomplete")
    return SHARED_DATA


@pytest.fixture(scope="session")
def jfk_wav() -> Path:
    return shared_file("jfk.wav")


@pytest.fixture(scope="session")
def cuda_reason() -> str | None:
    """None when the CUDA backend opens here, else why not (for skip reasons)."""
    from saywho import _core
    from saywho._internal.device import cublas_search_path, cuda_library_path

    library = cuda_library_path()
    if library is None:
        return "needs a GPU: this build has no CUDA backend"
    ok, reason = _core.cuda_probe(library, cublas_search_path())
    return None if ok else f"needs a GPU: {reason}"


# The devices a golden runs on: the CPU always, a GPU where one answers, and
# the CUDA backend's own kernels on the CPU emulator (docs/cuda_emulator.md),
# which is how CI runs the GPU code. The emulator is slow (each GPU thread a
# fiber), so modules pick which goldens it runs; a GPU runs all.
GPU_DEVICES = ("cuda", "cuda-emulated")


@pytest.fixture(scope="session")
def runtimes(cuda_reason):
    """One Runtime per device name, opened on first use, closed at the end;
    "cuda" skips with the reason where no GPU answers."""
    from saywho._internal.device import open_runtime

    class Runtimes(dict):
        def __missing__(self, device):
            if device == "cuda" and cuda_reason:
                pytest.skip(cuda_reason)
            runtime = self[device] = open_runtime(device)
            return runtime

    opened = Runtimes()
    yield opened
    for runtime in opened.values():
        runtime.close()


@pytest.fixture(scope="session")
def whisper_models(runtimes):
    """The two real test checkpoints, loaded once per device."""
    from saywho.whisper.transcribe import WhisperModel

    from .weights import test_model_dir

    class Loaded(dict):
        """Keys "tiny.en", "base" (the CPU); "tiny.en:int8", "base:int8" and any
        "name[:compute]@device" load on first use."""

        def __missing__(self, key):
            spec, _, device = key.partition("@")
            name, _, compute = spec.partition(":")
            model = self[key] = WhisperModel(
                test_model_dir(name), runtimes[device or "cpu"], compute_type=compute or "float32"
            )
            return model

    loaded = Loaded()
    for name in ("tiny.en", "base"):
        loaded[name]  # noqa: B018 - loads it now, once
    yield loaded
    for model in loaded.values():
        model.close()


@pytest.fixture(scope="session")
def recordings():
    """jfk, the 2-minute assembled recording, the same with a noise gap, and
    its first two pieces ("short", 42.4 s: two windows)."""
    import saywho

    from .long_recording import SHORT_MINUTES, assemble, with_noise_gap

    long2 = assemble(SHARED_DATA, 2.0)
    return {
        "jfk": saywho.load_audio(shared_file("jfk.wav")),
        "long2": long2,
        "long2gap": with_noise_gap(long2),
        "short": assemble(SHARED_DATA, SHORT_MINUTES),
    }


@pytest.fixture(scope="session")
def batch_corpus(tmp_path_factory):
    """(folder, files): 24 short cuts of the bundled recordings, one corrupt
    (tests/batch_corpus.py), shared by the batch tests of every engine."""
    from .batch_corpus import make_corpus

    root = tmp_path_factory.mktemp("corpus")
    return root, make_corpus(root)


@pytest.fixture(scope="session")
def local_batch(batch_corpus, tmp_path_factory):
    """(out, args, finished process) of one ``saywho batch`` over the corpus
    in this machine's one process: the reference the other engines match."""
    from .batch_corpus import run_batch_command

    root, _ = batch_corpus
    out = tmp_path_factory.mktemp("out")
    args = [str(root), "-o", str(out), *batch_options()]
    return out, args, run_batch_command(*args, cwd=out.parent)


def batch_options() -> list[str]:
    """The batch tests' options: the test tiny.en, greedy, one thread (the
    Ray actors' arithmetic, one CPU each, and fair to a shared box)."""
    from .weights import test_model_dir

    return ["--model", str(test_model_dir("tiny.en")), "--beam-size", "1", "--threads", "1"]
