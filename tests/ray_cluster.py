"""A real Ray cluster on this machine: a head and more nodes, each its own
``ray start --block`` in a session of its own.

Everything a node runs (GCS, raylet, and its workers, which Ray puts in
process groups of their own) stays in the session of the ``ray start`` that
made it, so stopping kills exactly the processes of those sessions, never
another user's Ray (``ray stop`` would stop every Ray on the machine). Ray
keeps its files in a temporary folder of this cluster's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalCluster:
    """``with LocalCluster(nodes=2, cpus=1) as cluster:`` ``cluster.address``."""

    def __init__(self, nodes: int = 2, cpus: int = 1):
        self.nodes = nodes
        self.cpus = cpus
        self.procs: list[subprocess.Popen] = []
        # short: Ray's socket paths live under it (and AF_UNIX allows ~107 bytes)
        self.temp = tempfile.mkdtemp(prefix="sw-ray-", dir="/tmp")
        self.address = f"127.0.0.1:{free_port()}"
        self.env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")

    def _start(self, args: list[str], name: str) -> None:
        log = open(Path(self.temp) / f"{name}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [RAY, "start", *args, "--block", "--node-ip-address=127.0.0.1"]
            + [f"--num-cpus={self.cpus}", "--num-gpus=0", "--disable-usage-stats"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,  # its own process group: what stop() kills
        )
        self.procs.append(proc)

    def start(self) -> LocalCluster:
        port = self.address.rsplit(":", 1)[1]
        self._start(
            ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={self.temp}"],
            "head",
        )
        self.wait_for_nodes(1, timeout=120)
        for n in range(1, self.nodes):
            self._start([f"--address={self.address}"], f"node{n}")
        self.wait_for_nodes(self.nodes, timeout=120)
        return self

    def alive_nodes(self) -> int:
        probe = (
            "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False);"
            "print(sum(n['Alive'] for n in ray.nodes()))"
        )
        try:
            proc = subprocess.run(
                [sys.executable, "-c", probe, self.address],
                capture_output=True,
                text=True,
                env=self.env,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            return 0
        return int(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else 0

    def wait_for_nodes(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"ray start exited with {proc.returncode}: {self.logs()}")
            if self.alive_nodes() >= count:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{count} Ray nodes not up in {timeout} s: {self.logs()}")
            time.sleep(1)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in Path(self.temp).glob("*.log"))

    def pids(self, sessions: set[int] | None = None) -> set[int]:
        """The live processes of this cluster (members of its nodes' sessions;
        zombies left for init to reap are not counted)."""
        sessions = {p.pid for p in self.procs} if sessions is None else sessions
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid pgrp session ...: comm may hold spaces
            state, _, _, session = stat.rsplit(")", 1)[1].split()[:4]
            if int(session) in sessions and state != "Z":
                found.add(int(entry))
        return found

    def workers(self, marker: str) -> list[int]:
        """Pids of this cluster's worker processes whose title has ``marker``."""
        found = []
        for pid in self.pids():
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if title.startswith(b"ray::") and marker.encode() in title:
                found.append(pid)
        return sorted(found)

    def stop(self) -> None:
        """SIGTERM to each ``ray start`` (it stops its node), then SIGKILL to
        every process of the cluster's sessions still there after 5 s."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self.pids():
            for proc in self.procs:
                proc.poll()
            time.sleep(0.2)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self.procs:
            proc.wait(timeout=30)
        shutil.rmtree(self.temp, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
