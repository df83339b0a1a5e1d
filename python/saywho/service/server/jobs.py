"""Jobs on disk: SQLite (the standard library's) and a spool folder of uploads.

A job's row holds its request, state, progress and, when done, its
transcript or error. Each change is one committed transaction (WAL,
synchronous=FULL), so after ``kill -9`` a restart finds every finished result
and puts every job that was queued or running back in the queue: it runs
again from its upload, which stays in the spool until the job ends. Finished
jobs expire after ``ttl`` seconds. A job belongs to the API key that made it
(``owner``: a digest of the key, never the key): with keys, a key lists,
reads and deletes only its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,          -- queued, running, succeeded, failed, cancelled
    request TEXT NOT NULL,        -- fields.AudioRequest as JSON
    upload TEXT,                  -- the spooled audio's path, until the job ends
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL,
    stage TEXT,
    done REAL,
    total REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    result TEXT,                  -- transcript.Transcript as JSON
    error TEXT,                   -- errors.APIError's body and status as JSON
    owner TEXT                    -- the creating key's digest (none without keys)
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
"""
ACTIVE = ("queued", "running")


class JobStore:
    def __init__(self, directory: str | os.PathLike, ttl: float):
        self.directory = Path(directory)
        self.spool = self.directory / "uploads"
        self.spool.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.directory / "jobs.sqlite3", check_same_thread=False, isolation_level=None
        )
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        columns = {r["name"] for r in self._db.execute("PRAGMA table_info(jobs)")}
        if "owner" not in columns:  # a database from before owners
            self._db.execute("ALTER TABLE jobs ADD COLUMN owner TEXT")

    def new_upload_path(self, kind: str) -> Path:
        """A fresh spool path, named by a random id (never by the client)."""
        return self.spool / f"{kind}-{uuid.uuid4().hex}"

    def _write(self, sql: str, args: tuple) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    def create(self, request: dict, upload: Path, owner: str | None = None) -> str:
        job_id = "job_" + uuid.uuid4().hex
        now = time.time()
        self._write(
            "INSERT INTO jobs (id, state, request, upload, created_at, updated_at, owner) "
            "VALUES (?, 'queued', ?, ?, ?, ?, ?)",
            (job_id, json.dumps(request), str(upload), now, now, owner),
        )
        return job_id

    def get(self, job_id: str) -> sqlite3.Row | None:
        with self._lock:
            return self._db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()

    def owned(self, job_id: str, owner: str | None) -> sqlite3.Row | None:
        """The job, if ``owner`` made it (another key's job is as absent)."""
        row = self.get(job_id)
        return row if row is not None and row["owner"] == owner else None

    def list(self, owner: str | None = None, limit: int = 100) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(
                "SELECT * FROM jobs WHERE owner IS ? ORDER BY created_at DESC LIMIT ?",
                (owner, limit),
            ).fetchall()

    def active(self) -> int:
        """Jobs queued or running: what --max-jobs bounds."""
        with self._lock:
            return self._db.execute(
                "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')"
            ).fetchone()[0]

    def start(self, job_id: str) -> bool:
        """queued -> running; False when the job was cancelled meanwhile."""
        return (
            self._write(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, updated_at = ? "
                "WHERE id = ? AND state = 'queued'",
                (time.time(), job_id),
            )
            == 1
        )

    def progress(self, job_id: str, stage: str, done: float, total: float) -> None:
        self._write(
            "UPDATE jobs SET stage = ?, done = ?, total = ?, updated_at = ? WHERE id = ?",
            (stage, done, total, time.time(), job_id),
        )

    def _finish(self, job_id: str, state: str, result: str | None, error: str | None) -> None:
        now = time.time()
        with self._lock:
            row = self._db.execute("SELECT upload FROM jobs WHERE id = ?", (job_id,)).fetchone()
            self._db.execute(
                "UPDATE jobs SET state = ?, result = ?, error = ?, upload = NULL, "
                "finished_at = ?, updated_at = ? WHERE id = ? AND state IN ('queued', 'running')",
                (state, result, error, now, now, job_id),
            )
        # the row no longer points at the upload, so a crash here only leaves a stray file
        if row is not None and row["upload"]:
            with contextlib.suppress(OSError):
                os.unlink(row["upload"])

    def succeed(self, job_id: str, transcript: dict) -> None:
        self._finish(job_id, "succeeded", json.dumps(transcript), None)

    def fail(self, job_id: str, status: int, body: dict) -> None:
        self._finish(job_id, "failed", None, json.dumps({"status": status, "body": body}))

    def cancel(self, job_id: str) -> bool:
        """Cancels a queued or running job; False when it had already ended."""
        row = self.get(job_id)
        if row is None or row["state"] not in ACTIVE:
            return False
        self._finish(job_id, "cancelled", None, None)
        return True

    def delete(self, job_id: str) -> None:
        self._write(
            "DELETE FROM jobs WHERE id = ? AND state NOT IN ('queued', 'running')", (job_id,)
        )

    def recover(self) -> list[str]:
        """After a restart: jobs that were running are queued again; returns
        every queued job's id, oldest first, for the workers."""
        now = time.time()
        self._write(
            "UPDATE jobs SET state = 'queued', updated_at = ? WHERE state = 'running'", (now,)
        )
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM jobs WHERE state = 'queued' ORDER BY created_at"
            ).fetchall()
        self.remove_strays()
        return [r["id"] for r in rows]

    def remove_strays(self) -> None:
        """Spool files no job points at, at start-up only: a request's upload
        or a job's whose process was killed before it removed the file."""
        with self._lock:
            keep = {
                r["upload"]
                for r in self._db.execute("SELECT upload FROM jobs WHERE upload IS NOT NULL")
            }
        for path in self.spool.iterdir():
            if str(path) not in keep:
                with contextlib.suppress(OSError):
                    path.unlink()

    def expire(self) -> int:
        """Deletes finished jobs older than the ttl; returns how many."""
        return self._write(
            "DELETE FROM jobs WHERE state NOT IN ('queued', 'running') AND finished_at < ?",
            (time.time() - self.ttl,),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()
