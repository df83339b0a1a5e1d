"""saywho serve as a real process, driven by OpenAI's own client (and httpx
for the extensions and the errors): every response format, streaming,
speakers, translations, auth, the queue's 429 and each error's status."""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import httpx
import pytest
from openai import APIStatusError, AuthenticationError, NotFoundError, OpenAI

from saywho.formats.rttm import read_rttm

from .conftest import shared_file
from .server_process import Server

KEY = "test-key-not-secret"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("server") / "data", "--max-upload-mb", "2").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="anything", max_retries=0, timeout=300)


def transcribe(client, name="jfk.wav", **options):
    with open(shared_file(name), "rb") as f:
        return client.audio.transcriptions.create(file=f, **options)


def test_json_is_openais_transcription(client):
    result = transcribe(client, model="whisper-1")
    assert "ask not what your country can do for you" in result.text.lower()
    assert result.usage.type == "duration" and result.usage.seconds == pytest.approx(11.0)


@pytest.mark.parametrize("fmt", ["text", "srt", "vtt"])
def test_text_formats(client, fmt):
    text = transcribe(client, model="whisper-1", response_format=fmt)
    assert isinstance(text, str) and "country" in text
    if fmt == "srt":
        assert text.startswith("1\n00:00:00,000 --> 00:00:")
    if fmt == "vtt":
        assert text.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:")
    if fmt == "text":
        assert "-->" not in text


def test_verbose_json_has_segments_and_words(client):
    result = transcribe(
        client,
        model="whisper-1",
        response_format="verbose_json",
        timestamp_granularities=["word", "segment"],
        language="en",
    )
    assert result.language == "en" and result.duration == pytest.approx(11.0)
    assert result.usage.type == "duration" and result.usage.seconds == pytest.approx(11.0)
    assert result.segments and result.words
    for s in result.segments:
        assert 0.0 <= s.start < s.end <= 11.0 + 0.5
        assert s.tokens and all(isinstance(t, int) for t in s.tokens)
        assert s.avg_logprob < 0.0 and 0.0 <= s.no_speech_prob <= 1.0
        assert s.temperature == 0.0 and s.compression_ratio > 0.0
    words = [w.word for w in result.words]
    assert "country" in " ".join(words).lower()
    starts = [w.start for w in result.words]
    assert starts == sorted(starts) and all(w.end >= w.start for w in result.words)
    # words only when asked for
    plain = transcribe(client, model="whisper-1", response_format="verbose_json")
    assert plain.segments and plain.words is None


def test_diarized_json_names_speakers_as_the_reference_does(client):
    result = transcribe(
        client,
        "two_speakers.wav",
        model="gpt-4o-transcribe-diarize",
        response_format="diarized_json",
    )
    assert result.task == "transcribe" and result.duration == pytest.approx(30.0)
    assert result.usage.type == "duration" and result.usage.seconds == pytest.approx(30.0)
    assert {s.type for s in result.segments} == {"transcript.text.segment"}
    speakers = [s.speaker for s in result.segments]
    assert speakers[0] == "A" and set(speakers) - {"UNKNOWN"} == {"A", "B"}
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    pairs = []
    for s in result.segments:
        mid = (s.start + s.end) / 2
        talking = {t.speaker for t in reference if t.start <= mid < t.end}
        if len(talking) == 1 and s.speaker != "UNKNOWN":
            pairs.append((s.speaker, talking.pop()))
    mapping = {
        ours: Counter(r for o, r in pairs if o == ours).most_common(1)[0][0] for ours, _ in pairs
    }
    assert len(set(mapping.values())) == 2
    agree = sum(mapping[o] == r for o, r in pairs)
    assert len(pairs) >= 6 and agree >= 0.8 * len(pairs)


def test_verbose_json_with_speakers_has_them_on_segments_and_words(server):
    with open(shared_file("two_speakers.wav"), "rb") as f:
        r = httpx.post(
            server.url + "/v1/audio/transcriptions",
            files={"file": ("talk.wav", f, "audio/wav")},
            data={
                "model": "whisper-1",
                "response_format": "verbose_json",
                "timestamp_granularities[]": ["word", "segment"],
                "num_speakers": "2",
                "beam_size": "1",
                "vad_filter": "true",
            },
            timeout=300,
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert {s["speaker"] for s in body["segments"]} - {"UNKNOWN"} == {"A", "B"}
    assert {w["speaker"] for w in body["words"]} - {"UNKNOWN"} == {"A", "B"}
    assert body["usage"] == {"type": "duration", "seconds": 30.0}


def test_translation_through_the_multilingual_model(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        result = client.audio.translations.create(file=f, model="test:base")
    assert "country" in result.text.lower()
    with open(shared_file("jfk.wav"), "rb") as f:
        verbose = client.audio.translations.create(
            file=f, model="test:base", response_format="verbose_json"
        )
    assert verbose.segments and verbose.duration == pytest.approx(11.0)
    # openai's Translation and TranslationVerbose have no usage: none is sent
    assert "usage" not in verbose.model_dump() and "usage" not in result.model_dump()


def test_logprobs_per_word(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        result = client.audio.transcriptions.create(file=f, model="whisper-1", include=["logprobs"])
    assert [p.token.strip() for p in result.logprobs][-1] == "country."
    assert all(p.logprob <= 0.0 for p in result.logprobs)


def test_models_and_health(client, server):
    ids = [m.id for m in client.models.list().data]
    assert {"whisper-1", "gpt-4o-transcribe-diarize", "whisper-tiny.en", "large-v3"} <= set(ids)
    health = httpx.get(server.url + "/health").json()
    assert health["status"] == "ok" and health["device"] == "cpu"
    assert health["queue"]["workers"] == 1
    loaded = {m["model"] for m in health["models"]}
    assert any(m.endswith("whisper-tiny.en") for m in loaded)
    assert all(m["memory"]["allocated_bytes"] >= 0 for m in health["models"])


def post(server, data=None, content=b"", name="a.wav", headers=None, path="transcriptions"):
    files = {"file": (name, content, "audio/wav")} if content is not None else None
    return httpx.post(
        f"{server.url}/v1/audio/{path}",
        data={"model": "whisper-1", **(data or {})},
        files=files,
        headers=headers,
        timeout=300,
    )


def openai_error(response, status: int, param=None, code=None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and "Traceback" not in error["message"]
    if param is not None:
        assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    return error


JFK = shared_file("jfk.wav").read_bytes()


@pytest.mark.parametrize(
    ("data", "content", "param"),
    [
        ({}, b"this is not audio, only some text that says so " * 50, "file"),
        ({}, b"", "file"),
        ({}, None, "file"),
        ({"temperature": "hot"}, JFK, "temperature"),
        ({"response_format": "xml"}, JFK, "response_format"),
        ({"timestamp_granularities[]": "paragraph"}, JFK, "timestamp_granularities"),
        ({"chunking_strategy": "sometimes"}, JFK, "chunking_strategy"),
        ({"known_speaker_names[]": "Ann"}, JFK, "known_speaker_references"),
        ({"num_speakers": "two"}, JFK, "num_speakers"),
        ({"diarization": "/etc"}, JFK, "diarization"),
        ({"include[]": "everything"}, JFK, "include"),
    ],
)
def test_bad_requests_are_400s(server, data, content, param):
    error = openai_error(post(server, data, content), 400, param=param)
    assert error["type"] == "invalid_request_error"


def test_hotwords_reach_the_transcriber(server):
    """faster-whisper's hotwords, as an extension field: the transcriber
    takes them (before it did, the server refused them with a 400)."""
    r = post(server, {"hotwords": "Kennedy inaugural", "response_format": "json"}, JFK)
    assert r.status_code == 200, r.text
    assert "country" in r.json()["text"]


def test_corrupt_audio_names_the_clients_file_not_the_spool(server):
    r = post(server, content=b"RIFF" + b"\0" * 4000, name="meeting.wav")
    error = openai_error(r, 400, param="file")
    assert "uploads" not in error["message"]


@pytest.mark.parametrize(
    "data",
    [
        {"beam_size": "0"},
        {"chunking_strategy[type]": "server_vad", "chunking_strategy[threshold]": "2"},
        {"min_speakers": "3", "max_speakers": "2"},
        {
            "num_speakers": "2",
            "min_speakers": "1",
        },  # the one count rule (saywho.diarization.speaker_counts)
    ],
)
def test_values_saywho_refuses_are_400s(server, data):
    """saywho checks the values (OptionError): the server answers 400 with its message."""
    openai_error(post(server, data, JFK), 400, code="invalid_value")


def test_a_diarization_pipeline_it_cannot_load_is_400(server):
    r = post(server, {"diarization": "nobody/no-such-pipeline"}, JFK)
    openai_error(r, 400, "diarization", "diarization_unavailable")


def test_unknown_model_is_404(server, client):
    openai_error(post(server, {"model": "no-such-model"}, JFK), 404, "model", "model_not_found")
    with pytest.raises(NotFoundError):
        transcribe(client, model="../../etc")


def test_upload_over_the_limit_is_413(server):
    openai_error(post(server, content=b"\0" * (3 << 20)), 413, "file", "file_too_large")


def test_unknown_route_is_an_openai_404(server):
    openai_error(httpx.get(server.url + "/v1/nothing"), 404)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """Auth on, one worker, at most one request waiting."""
    srv = Server(
        tmp_path_factory.mktemp("guarded") / "data", "--api-key", KEY, "--max-queued", "1"
    ).start()
    yield srv
    srv.stop()


def test_auth(guarded):
    good = OpenAI(base_url=guarded.url + "/v1", api_key=KEY, max_retries=0)
    with open(shared_file("jfk.wav"), "rb") as f:
        assert "country" in good.audio.transcriptions.create(file=f, model="whisper-1").text
    bad = OpenAI(base_url=guarded.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(AuthenticationError), open(shared_file("jfk.wav"), "rb") as f:
        bad.audio.transcriptions.create(file=f, model="whisper-1")
    openai_error(post(guarded, content=JFK), 401, code="invalid_api_key")
    # health stays open for load balancers
    assert httpx.get(guarded.url + "/health").status_code == 200


def test_full_queue_is_429_with_retry_after(guarded):
    headers = {"Authorization": f"Bearer {KEY}"}
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(
            pool.map(lambda _: post(guarded, {"beam_size": "1"}, JFK, headers=headers), range(8))
        )
    codes = Counter(r.status_code for r in answers)
    assert codes[200] >= 2 and codes[429] >= 1 and set(codes) <= {200, 429}, codes
    refused = next(r for r in answers if r.status_code == 429)
    openai_error(refused, 429)
    assert int(refused.headers["retry-after"]) >= 1


def test_the_openai_client_sees_errors_as_its_own(client):
    with pytest.raises(APIStatusError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(
            file=f,
            model="whisper-1",
            chunking_strategy={"type": "server_vad", "threshold": 3.0, "silence_duration_ms": 500},
        )
    assert info.value.status_code == 400
    assert "threshold" in json.loads(info.value.response.text)["error"]["message"]


def test_server_vad_through_the_openai_client(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        result = client.audio.transcriptions.create(
            file=f,
            model="whisper-1",
            chunking_strategy={"type": "server_vad", "threshold": 0.5, "silence_duration_ms": 500},
        )
    assert "country" in result.text


def test_import_saywho_loads_no_web_framework():
    code = (
        "import sys, saywho, saywho.cli.main; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    helped = subprocess.run(
        [sys.executable, "-m", "saywho", "serve", "--help"], capture_output=True, text=True
    )
    assert helped.returncode == 0 and "--api-key" in helped.stdout


def test_serve_takes_the_model_flags_from_the_shared_table():
    """--model, --device and --compute-type mean in saywho serve what they
    mean in saywho: one declaration (cli_options.add_model_options)."""
    from saywho.cli.main import build_parser as cli_parser
    from saywho.service.server.cli import build_parser as serve_parser

    def flags(parser):
        return {
            a.dest: (a.option_strings, a.default, a.choices)
            for a in parser._actions
            if a.dest in ("model", "device", "compute_type")
        }

    assert flags(serve_parser()) == flags(cli_parser())
    assert len(flags(serve_parser())) == 3


def test_uploads_go_under_generated_names_and_are_removed(server):
    r = post(server, content=JFK, name="../../../evil.wav")
    assert r.status_code == 200 and "country" in r.json()["text"]
    # every request above, good or refused, left nothing behind
    assert list((server.data_dir / "uploads").iterdir()) == []
    assert not list(server.data_dir.parent.rglob("evil*"))


def test_shutdown_answers_the_waiting_503_and_finishes_the_running(tmp_path):
    srv = Server(tmp_path / "data").start()
    two = shared_file("two_speakers.wav").read_bytes()

    def queue_is(key: str, n: int) -> None:
        for _ in range(600):
            if httpx.get(srv.url + "/health").json()["queue"][key] >= n:
                return
            time.sleep(0.05)
        raise AssertionError(f"the queue never had {n} {key}")

    try:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            running = pool.submit(post, srv, {"model": "gpt-4o-transcribe-diarize"}, two)
            queue_is("running", 1)
            waiting = [pool.submit(post, srv, {"beam_size": "1"}, JFK) for _ in range(2)]
            queue_is("queued", 2)
            os.kill(srv.proc.pid, signal.SIGTERM)
            for w in waiting:
                openai_error(w.result(), 503, code="shutting_down")
            assert running.result().status_code == 200
        # uvicorn, its shutdown done, re-raises the signal it caught
        assert srv.proc.wait(120) in (0, -signal.SIGTERM)
        assert "Finished server process" in srv.log()
    finally:
        srv.stop()
