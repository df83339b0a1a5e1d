"""What a batch costs on one machine and on Ray: files/hour, x realtime, and
what Ray adds per file and once per run.

Three engines run ``saywho batch`` over the same files (cuts of the bundled
two-speaker conversation, with diarization): one process (``--threads``
threads), Ray with one local node (one actor with those threads) and Ray
with two local nodes on the same box (one CPU and one actor each). Each
engine runs a batch of one file and a batch of all files into fresh output
folders; the difference gives the cost per file and the fixed cost of a run
(loading the models, and for Ray connecting and starting the actors).
The index's seconds inside Pipeline.process, taken from the wall, leave
what each engine adds outside it per file; Ray's per-file overhead is that
less one process's (the wall itself moves with a shared box's load). The Ray
clusters are real (tests/ray_cluster.py) and started before the clock runs;
their start-up is reported on its own.

On a box of two cores, two nodes can only share them: expect no gain. The
first lines say which CPU ran and how loaded the machine was; on a shared
machine the figures move with the other users' load.

    python3 bench/bench_batch.py [--files 8] [--seconds 15] [--threads 2] [--model tiny.en]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import wave
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))
os.environ.setdefault("SAYWHO_TEST_WEIGHTS", str(REPO / ".cache" / "test-weights"))


def make_files(folder: Path, count: int, seconds: float) -> list[Path]:
    """``count`` cuts of ``seconds`` from two_speakers.wav (30 s), wrapping."""
    source = REPO / "tests" / "data" / "shared" / "two_speakers.wav"
    with wave.open(str(source), "rb") as r:
        params = r.getparams()
        frames = r.readframes(r.getnframes())
    rate, width = params.framerate, params.sampwidth * params.nchannels
    length = int(seconds * rate)
    total = len(frames) // width
    files = []
    for n in range(count):
        start = (n * rate * 3) % max(total - length, 1)
        path = folder / f"file{n:03d}.wav"
        with wave.open(str(path), "wb") as w:
            w.setparams(params)
            w.writeframes(frames[start * width : (start + length) * width])
        files.append(path)
    return files


def run(files: list[Path], out: Path, options: list[str], extra: list[str]) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "saywho", "batch", *map(str, files), "-o", str(out), "-q"]
        + options
        + extra,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"saywho batch failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    records = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    return {
        "wall": wall,
        "audio": sum(r["duration"] for r in records),
        "files": len(records),
        # seconds inside Pipeline.process, as the index says
        "inside": sum(r["seconds"] for r in records),
    }


def engine(name: str, files, folder: Path, options, extra) -> dict:
    one = run(files[:1], folder / f"{name}-1", options, extra)
    many = run(files, folder / f"{name}-n", options, extra)
    per_file = (many["wall"] - one["wall"]) / max(len(files) - 1, 1)
    # the time outside Pipeline.process per file: what the engine adds, less
    # moved by the load of a shared box than the wall (one actor runs at a
    # time only in the one-process and one-node runs, where it is exact)
    outside = (many["wall"] - many["inside"] - (one["wall"] - one["inside"])) / max(
        len(files) - 1, 1
    )
    print(
        f"  {name}: 1 file {one['wall']:.1f} s, {len(files)} files {many['wall']:.1f} s", flush=True
    )
    return {
        "name": name,
        "wall": many["wall"],
        "files_per_hour": many["files"] / many["wall"] * 3600,
        "x_realtime": many["audio"] / many["wall"],
        "per_file": per_file,
        "outside": outside,
        "fixed": one["wall"] - per_file,
        "audio": many["audio"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--model", default="tiny.en")
    args = p.parse_args()

    from machine import describe

    from tests.ray_cluster import LocalCluster
    from tests.weights import test_model_dir

    print(describe())
    print(f"load average before: {os.getloadavg()} (a shared machine: other users' work counts)")
    options = ["--model", str(test_model_dir(args.model)), "--beam-size", "5"]
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        folder = Path(tmp)
        (folder / "audio").mkdir()
        files = make_files(folder / "audio", args.files, args.seconds)
        print(f"{len(files)} files of {args.seconds:.0f} s, {args.model}, beam 5, with speakers")
        results.append(
            engine("one process", files, folder, [*options, "--threads", str(args.threads)], [])
        )
        for nodes, cpus in ((1, args.threads), (2, max(args.threads // 2, 1))):
            t0 = time.perf_counter()
            with LocalCluster(nodes=nodes, cpus=cpus) as cluster:
                started = time.perf_counter() - t0
                name = f"ray {nodes} node{'s' if nodes > 1 else ''} x {cpus} CPU"
                result = engine(name, files, folder, options, ["--ray", cluster.address])
                result["cluster_start"] = started
                results.append(result)
    print(f"load average after: {os.getloadavg()}")
    print()
    print(
        f"{'engine':24} {'wall s':>7} {'files/h':>8} {'x rt':>6} {'s/file':>7} {'fixed s':>8}"
        f" {'outside s/file':>15} {'Ray adds s/file':>16} {'cluster start s':>16}"
    )
    base = results[0]["outside"]
    for r in results:
        adds = f"{r['outside'] - base:16.2f}" if r is not results[0] else f"{'':16}"
        start = f"{r['cluster_start']:16.1f}" if "cluster_start" in r else f"{'':16}"
        print(
            f"{r['name']:24} {r['wall']:7.1f} {r['files_per_hour']:8.0f} {r['x_realtime']:6.2f}"
            f" {r['per_file']:7.2f} {r['fixed']:8.1f} {r['outside']:15.2f} {adds} {start}"
        )


if __name__ == "__main__":
    main()
