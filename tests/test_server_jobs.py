"""Jobs through saywho serve: queued on disk, polled, cancelled, and still
there after ``kill -9``: finished results are kept and the interrupted job
runs again to completion."""

from __future__ import annotations

import time

import httpx

from .conftest import shared_file
from .server_process import Server


def submit(server, name: str, **fields) -> str:
    with open(shared_file(name), "rb") as f:
        r = httpx.post(
            server.url + "/v1/jobs",
            files={"file": (name, f, "audio/wav")},
            data={"model": "whisper-1", **fields},
            timeout=60,
        )
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["object"] == "audio.job" and job["status"] in ("queued", "running")
    return job["id"]


def job(server, job_id: str) -> dict:
    r = httpx.get(f"{server.url}/v1/jobs/{job_id}", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def wait(server, job_id: str, states, timeout: float = 300.0, stage: bool = False) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = job(server, job_id)
        if current["status"] in states and (not stage or current["progress"]["stage"]):
            return current
        assert current["status"] in ("queued", "running", *states), current
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} never reached {states}: {current}\n{server.log()}")


def result(server, job_id: str, fmt: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/v1/jobs/{job_id}/result", params={"response_format": fmt}, timeout=30
    )


def test_a_job_survives_kill_9(tmp_path):
    data = tmp_path / "data"
    server = Server(data).start()
    try:
        short = submit(server, "jfk.wav")
        finished = wait(server, short, {"succeeded"})
        assert finished["progress"]["stage"] and finished["attempts"] == 1
        long = submit(server, "two_speakers.wav", model="gpt-4o-transcribe-diarize")
        running = wait(server, long, {"running"}, stage=True)
        assert running["progress"]["total"] > 0
        server.kill()  # SIGKILL in the middle of the run
    finally:
        server.stop()
    assert len(list((data / "uploads").iterdir())) == 1  # the long job's audio, kept

    restarted = Server(data).start()
    try:
        done = wait(restarted, long, {"succeeded"})
        assert done["attempts"] == 2  # it ran again from its upload
        body = result(restarted, long, "diarized_json").json()
        assert {s["speaker"] for s in body["segments"]} - {"UNKNOWN"} == {"A", "B"}
        assert body["duration"] == 30.0
        assert body["usage"] == {"type": "duration", "seconds": 30.0}
        # the result finished before the crash is still there, in every format
        assert "country" in result(restarted, short, "text").text
        assert result(restarted, short, "srt").text.startswith("1\n00:00:00,000")
        assert list((data / "uploads").iterdir()) == []  # uploads go when their job ends
    finally:
        restarted.stop()


def test_cancel_fail_and_expire(tmp_path):
    # finished jobs expire after ~2 s here
    server = Server(tmp_path / "data", "--job-ttl-hours", "0.0006").start()
    try:
        running = submit(server, "two_speakers.wav", model="gpt-4o-transcribe-diarize")
        queued = submit(server, "jfk.wav")
        wait(server, running, {"running"}, stage=True)
        assert httpx.delete(f"{server.url}/v1/jobs/{queued}").json()["status"] == "cancelled"
        assert httpx.delete(f"{server.url}/v1/jobs/{running}").json()["status"] == "cancelled"
        r = result(server, running, "json")
        assert r.status_code == 409 and r.json()["error"]["code"] == "job_not_finished"

        broken = httpx.post(
            server.url + "/v1/jobs",
            files={"file": ("broken.wav", b"this is no audio at all " * 300, "audio/wav")},
            data={"model": "whisper-1"},
        ).json()["id"]
        failed = wait(server, broken, {"failed"})
        assert failed["error"]["param"] == "file" and "uploads" not in failed["error"]["message"]
        r = result(server, broken, "json")
        assert r.status_code == 400 and set(r.json()["error"]) == {
            "message",
            "type",
            "param",
            "code",
        }

        missing = httpx.get(f"{server.url}/v1/jobs/job_nothing")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "job_not_found"

        time.sleep(2.5)
        submit(server, "jfk.wav")  # a new job sweeps out the expired ones
        assert httpx.get(f"{server.url}/v1/jobs/{broken}").status_code == 404
    finally:
        server.stop()
