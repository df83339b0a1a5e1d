"""bench/bench_gpu.py, run as the GPU machine runs it, on the CPU and a tiny
shape: every engine gets a row, the rows say what they ran on, and each
engine decoded exactly the forced tokens of every window (no timings are
asserted: speed belongs to the bench's own output)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_rows_on_the_cpu(tmp_path):
    out = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_gpu.py")]
        + "--model test-shape --device cpu --compute-type float32 --beam-size 2".split()
        + "--batch-size 2 --tokens 7 --windows 2 --threads 1".split()
        + ["--checkpoints", str(tmp_path / "checkpoints"), "--json", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    machine, rows = report["machine"], report["rows"]
    assert machine["cpu"] and machine["card"].startswith("none")  # no GPU on this machine
    assert [(r["engine"], r["mode"]) for r in rows] == [
        (engine, mode)
        for mode in ("sequential", "batched")
        for engine in ("saywho", "transformers", "faster-whisper")
    ]
    for r in rows:
        assert r["model"] == "test-shape" and r["compute_type"] == "float32"
        assert r["threads"] == 1 and r["device"] == "cpu"
        if r["engine"] == "transformers" and not importlib.util.find_spec("torch"):
            # not installed (CI has no torch): the row says why
            assert "No module named" in r["error"], r
            continue
        assert "error" not in r, r
        assert r["tokens_per_window"] == [7, 7], r  # the same work for every engine
        assert r["windows_decoded"] == 2 and r["audio_seconds"] == 60.0
        assert r["x_realtime"] > 0
        assert r["version"].startswith({"saywho": "saywho ", "faster-whisper": "faster-whisper "}.get(r["engine"], "transformers "))  # fmt: skip
        if r["engine"] == "saywho":
            assert r["saywho_ratio"] == 1.0
        else:
            assert r["saywho_ratio"] > 0
    # the markdown table: a header and one line per row
    table = [line for line in done.stdout.splitlines() if line.startswith("| test-shape")]
    assert len(table) == len(rows)
    assert machine["cpu"] in done.stdout


def test_token_parity_on_the_emulator(tmp_path):
    # the GPU's Whisper check without real weights, run here on the emulator
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "gpu_token_parity.py")]
        + "--model test-shape --device cuda-emulated --windows 1 --tokens 4".split()
        + ["--modes", "greedy", "beam5", "--checkpoints", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["greedy"] == {"windows": 1, "identical": True}
    assert report["beam5"] == {"windows": 1, "identical": True}


def test_token_parity_names_the_first_difference():
    sys.path.insert(0, str(REPO / "bench"))
    from gpu_token_parity import compare

    got = compare([[1, 2, 3], [4, 5, 6, 7]], [[1, 2, 3], [4, 5, 9, 7]])
    assert got["identical"] is False
    assert got["first_difference"] == {
        "window": 1,
        "position": 2,
        "cpu": [6, 7],
        "device": [9, 7],
    }
    assert compare([[1]], [[1]]) == {"windows": 1, "identical": True}
