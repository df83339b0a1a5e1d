"""What the installed package holds: the bundled sample, and a CUDA backend
that depends on no CUDA library at link time (cuBLAS is found at run time)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np

import saywho
from saywho._internal.device import cuda_library_path


def test_bundled_sample_decodes():
    samples = saywho.load_audio(saywho.sample_path())
    assert abs(samples.size / 16000 - 30.0) < 0.1
    assert np.sqrt(np.mean(samples**2)) > 0.01


def test_cuda_backend_is_built_whenever_nvcc_is_present():
    library = cuda_library_path()
    if shutil.which("nvcc") is None:
        assert library is None or library.endswith("libsaywho_cuda.so")
        return
    assert library is not None, "nvcc is on PATH but the CUDA backend was not built"
    dynamic = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True)
    needed = [line for line in dynamic.stdout.splitlines() if "(NEEDED)" in line]
    assert needed, "readelf shows no NEEDED entries"
    assert not [n for n in needed if "cudart" in n or "cublas" in n or "cudnn" in n], needed
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", library], capture_output=True, text=True, check=True
    )
    assert "sw_cuda_backend_open" in symbols.stdout
