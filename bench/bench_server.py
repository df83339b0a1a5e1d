"""saywho serve under load, through the official openai client.

--clients concurrent clients each send --requests transcriptions of the
bundled 30 s sample (tiny.en test weights, CPU) to a real ``saywho serve``
process on localhost. Printed: failures, p50/p95 latency, throughput in
seconds of audio per second against the same number of transcriptions run
one after the other in this process by a Pipeline (the server's overhead:
1 - server/in-process; goal <= 5%), and the server's RSS after the first
--rss-after requests and at the end (goal: within 20 MB).

    python3 bench/bench_server.py [--clients 16] [--requests 20] [--rss-after 50]
        [--baseline N] [--model DIR] [--beam-size 5]

The issue's figures are 16 x 20 and, for memory, a run of 1,000 requests
(--clients 16 --requests 63). Every --rss-after requests a line gives the
server's RSS, the elapsed time and the load average as they happen (flushed,
so a run stopped early still has its curve). --baseline sets how many
transcriptions the in-process run times (default: as many as the server ran;
a throughput is a rate, so fewer measure it too when time is short). The
CPU's model and the load average are printed with the figures: on a shared
machine they move.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from checkout_weights import whisper_dir
from machine import cpu_model
from openai import OpenAI

import saywho

REPO = Path(__file__).resolve().parents[1]
# the installed package cannot know where the checkout keeps its test weights
os.environ.setdefault("SAYWHO_TEST_WEIGHTS", str(REPO / ".cache" / "test-weights"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_server(model: str, data: str, clients: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "saywho", "serve", "--port", str(port), "--model", model,
         "--device", "cpu", "--data-dir", data, "--max-queued", str(clients),
         "--log-level", "warning"],
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    os.kill(proc.pid, signal.SIGTERM)
    raise SystemExit("saywho serve did not start")


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time, all its threads (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_process(model: str, sample: Path, count: int, beam_size: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) for ``count`` transcriptions one after the
    other in this process."""
    with saywho.Pipeline(model=model, device="cpu", log_memory=False) as p:
        p.transcribe(str(sample), beam_size=beam_size)  # warm, as the server's first request
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            p.transcribe(str(sample), beam_size=beam_size)
        return time.perf_counter() - start, time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=20, help="per client")
    ap.add_argument("--rss-after", type=int, default=50, help="and every so many after")
    ap.add_argument("--baseline", type=int, default=None, help="in-process runs timed")
    ap.add_argument(
        "--stop-after", type=float, default=None, help="seconds: no new request after, report"
    )
    ap.add_argument("--model", default=None)
    ap.add_argument("--beam-size", type=int, default=5)
    args = ap.parse_args()
    model = args.model or str(whisper_dir("tiny.en"))
    sample = saywho.sample_path()
    duration = len(saywho.load_audio(sample)) / saywho.SAMPLE_RATE
    total = args.clients * args.requests
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs), load average {os.getloadavg()}")
    print(f"{args.clients} clients x {args.requests} requests of {duration:.0f} s, {model}")
    sys.stdout.reconfigure(line_buffering=True)  # the curve is read while it runs

    with tempfile.TemporaryDirectory() as data:
        proc, url = start_server(model, data, args.clients)
        try:
            client = OpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=3600)
            audio = sample.read_bytes()
            latencies: list[float] = []
            failures: list[str] = []
            done = 0
            rss_early = None
            lock = threading.Lock()

            def one_client(_i: int) -> None:
                nonlocal done, rss_early
                for _ in range(args.requests):
                    if args.stop_after and time.perf_counter() - start > args.stop_after:
                        return
                    t0 = time.perf_counter()
                    try:
                        client.audio.transcriptions.create(
                            file=("sample.wav", audio, "audio/wav"),
                            model="whisper-1",
                            extra_body={"beam_size": args.beam_size},
                        )
                    except Exception as e:  # counted, not fatal: the bench reports them
                        with lock:
                            failures.append(repr(e)[:200])
                        continue
                    with lock:
                        latencies.append(time.perf_counter() - t0)
                        done += 1
                        if done % args.rss_after == 0:
                            rss = rss_mb(proc.pid)
                            if done == args.rss_after:
                                rss_early = rss
                            print(
                                f"  {done} requests, {time.perf_counter() - start:.0f} s: "
                                f"RSS {rss:.1f} MB, load {os.getloadavg()[0]:.2f}"
                            )

            client.audio.transcriptions.create(
                file=("sample.wav", audio, "audio/wav"), model="whisper-1"
            )  # warm
            start, cpu_start = time.perf_counter(), cpu_seconds(proc.pid)
            with concurrent.futures.ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(one_client, range(args.clients)))
            wall = time.perf_counter() - start
            server_cpu = cpu_seconds(proc.pid) - cpu_start
            rss_end = rss_mb(proc.pid)
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(60)
    served = len(latencies) * duration / wall
    baseline = args.baseline or len(latencies) or total
    alone, alone_cpu = in_process(model, sample, baseline, args.beam_size)
    local = baseline * duration / alone
    served_n = max(1, len(latencies))
    latencies.sort()
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else 0
    print(
        f"requests: {len(latencies)} answered, {len(failures)} failures, of {total} planned"
        + (f" (first: {failures[0]})" if failures else "")
    )
    print(f"latency: p50 {statistics.median(latencies):.2f} s, p95 {p95:.2f} s")
    print(
        f"throughput: server {served:.2f} s of audio/s over {wall:.0f} s, in-process "
        f"{local:.2f} s/s ({baseline} runs, {alone:.0f} s), "
        f"overhead {100 * (1 - served / local):.1f}%"
    )
    # CPU time per transcription moves less than wall time when others share the cores
    each_server, each_local = server_cpu / served_n, alone_cpu / baseline
    print(
        f"CPU per transcription: server process {each_server:.2f} s, in-process "
        f"{each_local:.2f} s, overhead {100 * (each_server / each_local - 1):.1f}%"
    )
    if rss_early is not None:
        print(
            f"server RSS: {rss_early:.1f} MB after {args.rss_after} requests, "
            f"{rss_end:.1f} MB after {len(latencies)} ({rss_end - rss_early:+.1f} MB)"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
