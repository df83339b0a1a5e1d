"""A bounded soak of saywho serve (issue 41): rounds of good, bad, slow and
abandoned requests from concurrent clients on loopback. Every answer is
what it should be and in OpenAI's shape, the server's resident memory after
the last rounds stays within RSS_BAND_MB of the warm-up rounds', and nothing is
left behind (uploads, Pipelines, runs). A few minutes on 2 cores."""

from __future__ import annotations

import concurrent.futures
import socket
import time

import httpx
import numpy as np
import pytest
from openai import OpenAI

from .conftest import shared_file
from .server_process import Server
from .test_server import JFK
from .test_server_hostile import assert_openai_shape

ROUNDS = 5
# the first two rounds warm up. Which requests overlap differs from round to
# round, and the most overlapping one sets the memory pool's high-water mark:
# the pool keeps the blocks it reserved (a cache, returned at close), and one
# such reservation came at a random round, +82 MiB reserved once and flat
# after (rounds 2 to 5 seen, before and after the round that added the span
# uploads). So RSS is compared net of what the pool holds in reserve, within
# RSS_BAND_MB of allocator noise, and the pool's live bytes must come back to
# the warm rounds' level within POOL_BAND_MB: growth in either is a leak.
WARM_ROUNDS = 2
RSS_BAND_MB = 100
POOL_BAND_MB = 8
TWO = shared_file("two_speakers.wav").read_bytes()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(
        tmp_path_factory.mktemp("soak") / "data",
        "--max-upload-mb",
        "2",
        "--max-queued",
        "8",  # above the 6 clients: every kind reaches its own answer
        "--body-timeout-s",
        "2",
    ).start()
    yield srv
    srv.stop()


def rss_mb(server) -> float:
    with open(f"/proc/{server.proc.pid}/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def form(server, data: dict, content: bytes, timeout: float = 300) -> httpx.Response:
    return httpx.post(
        server.url + "/v1/audio/transcriptions",
        data={"model": "whisper-1", **data},
        files={"file": ("a.wav", content, "audio/wav")},
        timeout=timeout,
    )


def good(server):
    client = OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    try:
        result = client.audio.transcriptions.create(file=("jfk.wav", JFK), model="whisper-1")
    except Exception as e:  # a 429 is the one refusal a good request may meet
        assert getattr(e, "status_code", None) == 429, e
        return "429"
    assert "country" in result.text
    return "200"


def good_with_speakers(server):
    r = form(server, {"response_format": "diarized_json"}, JFK)
    if r.status_code == 429:
        return "429"
    assert r.status_code == 200, r.text
    assert "country" in r.json()["text"] and r.json()["segments"][0]["speaker"] == "A"
    return "200"


def expect(status: int, code: str | None = None):
    def check(r: httpx.Response) -> str:
        if r.status_code == 429:  # the queue was full: also an answer in OpenAI's shape
            assert_openai_shape(r.content)
            return "429"
        assert r.status_code == status, r.text
        error = assert_openai_shape(r.content)
        if code is not None:
            assert error["code"] == code, error
        return str(status)

    return check


def bad_temperature(server):
    return expect(400)(form(server, {"temperature": "7"}, JFK))


def bad_audio(server):
    return expect(400, "invalid_audio")(form(server, {}, np.random.default_rng(1).bytes(20000)))


def bad_model(server):
    return expect(404, "model_not_found")(form(server, {"model": "no-such-model"}, JFK))


def bad_diarization(server):
    return expect(400, "diarization_unavailable")(form(server, {"diarization": "x/y"}, JFK))


def too_large(server):
    return expect(413, "file_too_large")(form(server, {}, b"\0" * (3 << 20)))


def stalled(server):
    head = (
        b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 50000\r\n\r\n"
        b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=120) as s:
        s.sendall(head + b"\0" * 1000)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    assert status in (408, 429), answer[:200]
    assert_openai_shape(answer.partition(b"\r\n\r\n")[2])
    return str(status)


def abandoned(server):
    try:
        form(server, {"response_format": "diarized_json"}, TWO, timeout=1)
    except httpx.TimeoutException:
        return "left"
    return "answered before it left"


KINDS = [
    good_with_speakers,  # loads the diarization models in round 1, before RSS is taken
    good,
    bad_temperature,
    good,
    bad_audio,
    abandoned,
    bad_model,
    good,
    bad_diarization,
    too_large,
    stalled,
    good,
]


def one_round(server) -> list[str]:
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        return list(pool.map(lambda kind: kind(server), KINDS))


def idle(server) -> dict:
    """/health once nothing runs or waits (an abandoned run stops at its next window)."""
    deadline = time.monotonic() + 300
    while True:
        health = httpx.get(server.url + "/health").json()
        if health["queue"]["running"] == 0 and health["queue"]["queued"] == 0:
            return health
        assert time.monotonic() < deadline, health["queue"]
        time.sleep(0.2)


def pool_mb(health: dict) -> tuple[float, float]:
    """The one loaded model's memory pool: (live, reserved) MiB."""
    (model,) = health["models"]
    memory = model["memory"]
    return memory["allocated_bytes"] / 2**20, memory["reserved_bytes"] / 2**20


def test_soak_keeps_memory_and_answers(server):
    outcomes, rss, live = [], [], []
    for _ in range(ROUNDS):
        outcomes += one_round(server)
        in_use, reserved = pool_mb(idle(server))
        rss.append(rss_mb(server) - reserved)
        live.append(in_use)
    print(
        f"RSS net of the pool's reserve after each round (MiB): {[round(r, 1) for r in rss]}; "
        f"the pool's live MiB {[round(x, 1) for x in live]}; answers {outcomes}"
    )
    assert outcomes.count("200") >= ROUNDS * 4  # the good requests got through
    assert {"400", "404", "408", "413", "left"} <= set(outcomes), outcomes
    assert max(rss[WARM_ROUNDS:]) <= max(rss[:WARM_ROUNDS]) + RSS_BAND_MB, rss
    assert max(live[WARM_ROUNDS:]) <= max(live[:WARM_ROUNDS]) + POOL_BAND_MB, live
    # nothing left behind: no uploads, only the default Pipeline
    assert len(idle(server)["models"]) == 1
    assert list((server.data_dir / "uploads").iterdir()) == []
