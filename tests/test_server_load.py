"""saywho serve under load and abandonment (issue 41 rows 5, 12 and 17): a
non-streaming client that leaves stops its run, the 429's Retry-After comes
from the drain rate the worker really had, and silence is not transcribed
by default (VAD on, as speaches). A real server process on 127.0.0.1."""

from __future__ import annotations

import concurrent.futures
import re
import time

import httpx
import numpy as np
import pytest
from openai import OpenAI

import saywho

from .client_audio import wav_bytes
from .conftest import shared_file
from .server_process import Server
from .test_server import JFK, openai_error, post

LONG_REPEATS = 6  # two_speakers.wav six times: 3 minutes of speech


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("load") / "data", "--max-queued", "1").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def long_wav() -> bytes:
    speech = saywho.load_audio(shared_file("two_speakers.wav"))
    return wav_bytes(np.tile(speech, LONG_REPEATS))


def metric(server, name: str, **labels) -> float:
    """One sample of /metrics (0 when the series has none yet)."""
    text = httpx.get(server.url + "/metrics", timeout=30).text
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pattern = (
        rf"^saywho_{name}(?:\{{{re.escape(want)}\}})? (\S+)$" if want else rf"^saywho_{name} (\S+)$"
    )
    match = re.search(pattern, text, re.M)
    return float(match.group(1)) if match else 0.0


def wait_for(condition, what: str, limit_s: float = 300) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {limit_s} s")


def test_a_client_that_leaves_stops_its_run(server, long_wav):
    """Row 5: the run stops at its next window (outcome client_gone), where
    before it ran the whole file for nobody."""
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            server.url + "/v1/audio/transcriptions",
            data={"model": "whisper-1"},
            files={"file": ("long.wav", long_wav, "audio/wav")},
            timeout=3,
        )
    wait_for(
        lambda: metric(server, "runs_total", model="whisper-1", outcome="client_gone") == 1,
        "the abandoned run stopping",
    )
    wait_for(lambda: httpx.get(server.url + "/health").json()["queue"]["running"] == 0, "idle")
    assert metric(server, "runs_total", model="whisper-1", outcome="ok") == 0
    assert list((server.data_dir / "uploads").iterdir()) == []


def test_retry_after_follows_the_drain_rate(server, long_wav):
    """Row 12: after one long run, short requests are told to come back in
    about their own time, not the long run's (the mean run time made it 11x)."""
    r = post(server, content=long_wav, name="long.wav")
    assert r.status_code == 200, r.text
    long_s = metric(server, "run_seconds_total", model="whisper-1")
    assert long_s > 0
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: post(server, {"beam_size": "1"}, JFK), range(6)))
    refused = [a for a in answers if a.status_code == 429]
    assert refused and all(a.status_code in (200, 429) for a in answers)
    for a in refused:
        openai_error(a, 429, code="queue_full")
    # ahead of a new request: one 11 s clip running and one queued, each about
    # 1/16 of the 3-minute file's bytes; the old rule gave about long_s
    retry = max(int(a.headers["retry-after"]) for a in refused)
    assert 1 <= retry <= max(2.0, long_s / 3), (retry, long_s)


def test_silence_is_not_transcribed_by_default(server):
    """Row 17: VAD on by default: a minute of silence has no text; the
    request may still turn it off."""
    client = OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    silence = wav_bytes(np.zeros(60 * saywho.SAMPLE_RATE, np.float32))
    result = client.audio.transcriptions.create(
        file=("silence.wav", silence), model="whisper-1", response_format="verbose_json"
    )
    assert result.text == "" and result.segments == []
    speech = client.audio.transcriptions.create(file=("jfk.wav", JFK), model="whisper-1")
    assert "country" in speech.text
    off = post(server, {"vad_filter": "false", "response_format": "verbose_json"}, silence)
    assert off.status_code == 200 and off.json()["duration"] == pytest.approx(60.0)


def test_audio_length_and_request_time_limits(tmp_path, long_wav):
    """--max-audio-s: longer audio is a 413 as soon as it is decoded;
    --max-request-s: a request's run is stopped past it (504); jobs are exempt."""
    srv = Server(tmp_path / "data", "--max-audio-s", "60", "--max-request-s", "2").start()
    try:
        openai_error(post(srv, content=long_wav, name="long.wav"), 413, "file", "audio_too_long")
        two = shared_file("two_speakers.wav").read_bytes()
        slow = post(srv, {"response_format": "diarized_json"}, two)
        assert openai_error(slow, 504, code="request_timeout")["type"] == "server_error"
        r = httpx.post(
            srv.url + "/v1/jobs",
            data={"model": "whisper-1", "response_format": "diarized_json"},
            files={"file": ("two.wav", two)},
            timeout=60,
        )
        job = f"{srv.url}/v1/jobs/{r.json()['id']}"
        wait_for(lambda: httpx.get(job).json()["status"] not in ("queued", "running"), "the job")
        assert httpx.get(job).json()["status"] == "succeeded"
    finally:
        srv.stop()
