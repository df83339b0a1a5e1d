"""``saywho serve`` as a real process on localhost, for the server's tests.

Each server gets a free port and its own data folder; a test stops only the
process it started, by its pid (SIGTERM, or SIGKILL to test a crash).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .weights import test_model_dir

STARTUP_S = 120


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(
        self,
        data_dir: Path,
        *args: str,
        model: str | None = None,
        port: int = 0,
        python: str = sys.executable,
    ):
        # python: the interpreter whose saywho serves (a fresh venv's, for the wheel's test)
        self.python = python
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        self.log_path = data_dir.parent / f"server-{self.port}.log"
        self.args = [
            "--port",
            str(self.port),
            "--model",
            model or str(test_model_dir("tiny.en")),
            "--device",
            "cpu",
            "--data-dir",
            str(data_dir),
            # the other test weights, under the names the tests load them by
            "--model-folder",
            f"test:base={test_model_dir('base')}",
            "--model-folder",
            f"test:tiny.en={test_model_dir('tiny.en')}",
            *args,
        ]
        self.proc: subprocess.Popen | None = None

    def start(self) -> Server:
        env = dict(os.environ)
        env["HF_HUB_OFFLINE"] = "1"  # a test never downloads: what is not local is an error
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.python, "-m", "saywho", "serve", *self.args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"saywho serve exited with {self.proc.returncode}:\n{self.log()}"
                )
            try:
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"saywho serve did not answer in {STARTUP_S} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """SIGKILL: a crash, nothing cleaned up."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        if getattr(self, "_log", None) is not None:
            self._log.close()
