"""A real Ray cluster on this machine: a head and more nodes, each its own
``ray start --block`` in a session of its own.

Everything a node runs (GCS, raylet, and its workers, which Ray puts in
process groups of their own) stays in the session of the ``ray start`` that
made it, so stopping kills exactly the processes of those sessions, never
another user's Ray (``ray stop`` would stop every Ray on the machine). Ray
keeps its files in a temporary folder of this cluster's.

Everything stays on loopback. Ray 2.60 turns 127.0.0.1 into the machine's
interface address wherever it is given one, unless it runs single-host
(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, in ``env``: every process of the
cluster and every driver a test starts has it); the nodes start through
tests/ray_loopback_start.py, which lets a node join in that setting.
``node_addresses()`` reports what Ray registered, for the tests to assert.

The cluster runs without token authentication (RAY_AUTH_MODE=disabled), so
neither a token left in ~/.ray by an earlier Ray nor its absence changes it.
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

LOOPBACK_START = str(Path(__file__).with_name("ray_loopback_start.py"))

# Asks the GCS (argv[1]) for its live nodes every half second until there are
# argv[2] of them; prints each answer, so a time-out shows what Ray said.
NODE_PROBE = """
import sys, time
from ray._raylet import GcsClient
ADDRESSES = False
address, want = sys.argv[1], int(sys.argv[2])
client = None
while True:
    try:
        client = client or GcsClient(address=address)
        nodes = client.get_all_node_info(timeout=10)
        alive = [n.node_manager_address for n in nodes.values() if n.state == 0]
        print(f"alive nodes: {len(alive)} of {want} ({','.join(alive)})", flush=True)
        if len(alive) >= want:
            if ADDRESSES:
                print(",".join(sorted(alive)))
            break
    except Exception as e:
        print(f"GCS at {address}: {type(e).__name__}: {e}", flush=True)
    time.sleep(0.5)
"""


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
        self.env = dict(
            os.environ,
            RAY_USAGE_STATS_ENABLED="0",
            RAY_AUTH_MODE="disabled",
            RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",
        )

    def _start(self, args: list[str], name: str) -> None:
        log = open(Path(self.temp) / f"{name}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [sys.executable, LOOPBACK_START, *args, "--block", "--node-ip-address=127.0.0.1"]
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
        for n in range(1, self.nodes):
            self.wait_for_nodes(n)
            self._start([f"--address={self.address}"], f"node{n}")
        self.wait_for_nodes(self.nodes)
        return self

    def wait_for_nodes(self, count: int, timeout: float = 600) -> None:
        """Until Ray's GCS lists ``count`` live nodes. One probe process asks
        it every half second (a loaded 2-core box takes minutes to start a
        node: the time-out is generous, the wait ends as soon as Ray says
        so); a failure quotes the probe's last answer and the nodes' logs."""
        probe = subprocess.Popen(
            [sys.executable, "-c", NODE_PROBE, self.address, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
        )
        try:
            out, _ = probe.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            probe.kill()
            out, _ = probe.communicate()
        if probe.returncode == 0:
            return
        exited = [f"ray start exited with {p.returncode}" for p in self.procs if p.poll()]
        said = out.strip().splitlines()[-3:]
        raise RuntimeError(
            f"{count} Ray nodes not up in {timeout} s; Ray said: {said} {exited}\n{self.logs()}"
        )

    def node_addresses(self) -> list[str]:
        """The address of every live node as Ray registered it."""
        code = NODE_PROBE.replace("ADDRESSES = False", "ADDRESSES = True")
        out = subprocess.run(
            [sys.executable, "-c", code, self.address, str(self.nodes)],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=300,
            check=True,
        )
        return out.stdout.split()[-1].split(",")

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
