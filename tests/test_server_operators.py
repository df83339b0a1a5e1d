"""What an operator of saywho serve expects (issue 41): CORS, jobs owned by
their API key, /health without paths, /metrics in Prometheus' format, and
models that load, unload, stay under a cap and leave when idle. Real server
processes on 127.0.0.1, the openai client and httpx."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from openai import NotFoundError, OpenAI

from .conftest import shared_file
from .server_process import Server
from .weights import test_model_dir

ANN, BOB = "key-of-ann-not-secret", "key-of-bob-not-secret"
ORIGIN = "https://app.example.com"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("operators")
    # a third model the operator names: the tiny.en weights in another folder
    # (the default model is tiny.en's own folder; test:base is the second)
    (root / "other-tiny.en").symlink_to(test_model_dir("tiny.en"), target_is_directory=True)
    srv = Server(
        root / "data",
        "--model-folder",
        f"other:tiny.en={root / 'other-tiny.en'}",
        "--api-key",
        ANN,
        "--api-key",
        BOB,
        "--cors-origin",
        ORIGIN,
        "--max-models",
        "2",
        "--model-ttl-s",
        "-1",
    ).start()
    yield srv
    srv.stop()


def as_key(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def test_cors_preflight_and_answers(server):
    preflight = httpx.options(
        server.url + "/v1/audio/transcriptions",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200  # before the key is asked for
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in preflight.headers["access-control-allow-methods"]
    answer = httpx.get(server.url + "/v1/models", headers={"Origin": ORIGIN, **as_key(ANN)})
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == ORIGIN
    stranger = httpx.get(
        server.url + "/v1/models", headers={"Origin": "https://evil.example", **as_key(ANN)}
    )
    assert "access-control-allow-origin" not in stranger.headers


def test_a_key_sees_only_its_own_jobs(server):
    with open(shared_file("jfk.wav"), "rb") as f:
        r = httpx.post(
            server.url + "/v1/jobs",
            data={"model": "whisper-1"},
            files={"file": ("jfk.wav", f)},
            headers=as_key(ANN),
            timeout=60,
        )
    assert r.status_code == 202, r.text
    job = r.json()["id"]
    url = f"{server.url}/v1/jobs/{job}"
    assert [
        j["id"] for j in httpx.get(server.url + "/v1/jobs", headers=as_key(ANN)).json()["data"]
    ] == [job]
    assert httpx.get(server.url + "/v1/jobs", headers=as_key(BOB)).json()["data"] == []
    for method in ("GET", "DELETE"):
        theirs = httpx.request(method, url, headers=as_key(BOB))
        assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "job_not_found"
    assert httpx.get(url + "/result", headers=as_key(BOB)).status_code == 404
    deadline = time.monotonic() + 300
    while httpx.get(url, headers=as_key(ANN)).json()["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, "the job did not finish"
        time.sleep(0.3)
    result = httpx.get(url + "/result", headers=as_key(ANN))
    assert "country" in result.json()["text"]
    assert httpx.delete(url, headers=as_key(ANN)).json()["deleted"] is True


def test_health_shows_no_paths(server):
    text = httpx.get(server.url + "/health").text
    assert str(test_model_dir("tiny.en")) not in text and str(server.data_dir) not in text
    names = [m["model"] for m in httpx.get(server.url + "/health").json()["models"]]
    assert names and not [n for n in names if "/" in n and not n.startswith("test:")]


SAMPLE = re.compile(r'^saywho_[a-z_]+(\{([a-z_]+="[^"]*",?)+\})? -?[0-9.e+]+$')


def test_metrics_in_prometheus_format(server):
    client = OpenAI(base_url=server.url + "/v1", api_key=ANN, max_retries=0, timeout=300)
    with open(shared_file("jfk.wav"), "rb") as f:
        assert "country" in client.audio.transcriptions.create(file=f, model="whisper-1").text
    httpx.get(server.url + "/v1/nothing", headers=as_key(ANN))  # a 404 to count
    r = httpx.get(server.url + "/metrics")  # open, as /health
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    lines = r.text.splitlines()
    for line in lines:
        assert line.startswith(("# HELP saywho_", "# TYPE saywho_")) or SAMPLE.match(line), line
    values = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines if line[0] != "#"
    }
    assert values['saywho_runs_total{model="whisper-1",outcome="ok"}'] >= 1
    assert values['saywho_audio_seconds_total{model="whisper-1"}'] >= 11.0
    assert values['saywho_realtime_factor{model="whisper-1"}'] > 0
    assert values['saywho_http_requests_total{code="200",path="/v1/audio/transcriptions"}'] >= 1
    assert values['saywho_http_requests_total{code="404",path="unmatched"}'] >= 1
    assert values["saywho_resident_memory_bytes"] > 50e6
    assert values["saywho_models_loaded"] >= 1 and values["saywho_queue_requests"] == 0


def loaded(server) -> list[str]:
    return [
        m["model"] for m in httpx.get(server.url + "/api/ps", headers=as_key(ANN)).json()["models"]
    ]


def test_models_load_and_unload_by_name(server):
    url = server.url + "/api/ps/"
    assert httpx.post(url + "test:base", headers=as_key(ANN), timeout=300).status_code == 201
    assert "test:base" in loaded(server)
    assert httpx.delete(url + "test:base", headers=as_key(ANN)).status_code == 200
    assert "test:base" not in loaded(server)
    gone = httpx.delete(url + "test:base", headers=as_key(ANN))
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "model_not_loaded"
    default = httpx.delete(url + "whisper-1", headers=as_key(ANN))
    assert default.status_code == 409 and default.json()["error"]["code"] == "default_model"
    unknown = httpx.post(url + "no-such-model", headers=as_key(ANN))
    assert unknown.status_code == 404 and unknown.json()["error"]["param"] == "model"


def test_the_cap_unloads_the_least_recently_used(server):
    """--max-models 2: the default and one more; loading a third closes the idle one."""
    url = server.url + "/api/ps/"
    assert httpx.post(url + "test:base", headers=as_key(ANN), timeout=300).status_code == 201
    assert httpx.post(url + "other:tiny.en", headers=as_key(ANN), timeout=300).status_code == 201
    now = loaded(server)
    assert len(now) == 2 and "other:tiny.en" in now and "test:base" not in now
    # the folder names are the operator's: /v1/models lists them, paths never
    listed = [
        m["id"] for m in httpx.get(server.url + "/v1/models", headers=as_key(ANN)).json()["data"]
    ]
    assert "other:tiny.en" in listed and "test:base" in listed
    assert not any("/" in name and name.startswith("/") for name in listed)
    client = OpenAI(base_url=server.url + "/v1", api_key=ANN, max_retries=0, timeout=300)
    with pytest.raises(NotFoundError), open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(file=f, model="../base")
    assert len(loaded(server)) == 2


def test_an_idle_model_leaves_after_its_ttl(tmp_path):
    srv = Server(tmp_path / "data", "--model-ttl-s", "1").start()
    try:
        assert httpx.post(srv.url + "/api/ps/test:base", timeout=300).status_code == 201
        assert "test:base" in [m["model"] for m in httpx.get(srv.url + "/api/ps").json()["models"]]
        deadline = time.monotonic() + 120
        while "test:base" in [m["model"] for m in httpx.get(srv.url + "/api/ps").json()["models"]]:
            assert time.monotonic() < deadline, "test:base was never unloaded"
            time.sleep(0.2)
        # the default model stays, however long idle
        assert len(httpx.get(srv.url + "/api/ps").json()["models"]) == 1
        # the operator's log names the folder
        assert f"unloading {test_model_dir('base')}" in srv.log()
    finally:
        srv.stop()


def test_model_folder_flags_are_checked(tmp_path, capsys):
    """--model-folder NAME=FOLDER: a usage error (2) for a missing '=', a
    folder that is not there, or a name given twice, before anything loads."""
    from saywho.service.server.cli import main

    folder = str(test_model_dir("base"))
    for bad, said in (
        (["--model-folder", "base"], "NAME=FOLDER"),
        (["--model-folder", f"x={tmp_path / 'none'}"], "is not a folder"),
        (["--model-folder", f"x={folder}", "--model-folder", f"x={folder}"], "twice"),
    ):
        with pytest.raises(SystemExit) as e:
            main(bad)
        assert e.value.code == 2 and said in capsys.readouterr().err
