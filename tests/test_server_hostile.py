"""saywho serve against the reproductions of issue 41: each bad field a 400
naming it, nothing a client sends loads or keeps what it should not, and
the answers OpenAI's client expects. A real server process on 127.0.0.1,
driven by the openai client where it can send the input, raw HTTP where
it cannot."""

from __future__ import annotations

import base64
import json
import socket

import httpx
import numpy as np
import pytest
from openai import BadRequestError, NotFoundError, OpenAI

import saywho

from .client_audio import wav_bytes
from .conftest import shared_file
from .server_process import Server
from .test_server import JFK, openai_error, post

BODY_TIMEOUT_S = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(
        tmp_path_factory.mktemp("hostile") / "data",
        "--max-upload-mb",
        "2",
        "--body-timeout-s",
        str(BODY_TIMEOUT_S),
        "--max-jobs",
        "2",
    ).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="anything", max_retries=0, timeout=300)


def health(server) -> dict:
    return httpx.get(server.url + "/health", timeout=30).json()


def raw_request(server, head: bytes, body: bytes = b"", timeout: float = 60) -> bytes:
    """Sends bytes as they are (what no HTTP client would send); the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        s.sendall(head + body)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    return answer


def split_answer(answer: bytes) -> tuple[int, dict, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


def assert_openai_shape(body: bytes) -> dict:
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


# -- row 1: a bogus diarization name loads nothing and keeps nothing --------------


def test_bogus_diarization_names_load_no_pipeline(server):
    before = len(health(server)["models"])
    for i in range(5):
        r = post(server, {"diarization": f"x/p{i}"}, JFK)
        error = openai_error(r, 400, "diarization", "diarization_unavailable")
        assert f"x/p{i}" in error["message"]
    assert len(health(server)["models"]) == before == 1


# -- row 3: speaker counts out of the int8 range ---------------------------------


@pytest.mark.parametrize("field", ["num_speakers", "max_speakers"])
def test_huge_speaker_counts_are_answered(server, field):
    """128 and 500 overflowed the count's int8 (a 500); now a count above
    what the audio has is only a bound nothing reaches: one voice, one speaker."""
    value = {"num_speakers": "128", "max_speakers": "500"}[field]
    r = post(server, {field: value, "response_format": "diarized_json"}, JFK)
    assert r.status_code == 200, r.text
    assert "country" in r.json()["text"]
    assert {s["speaker"] for s in r.json()["segments"]} == {"A"}


# -- row 6: temperature outside 0..1 ----------------------------------------------


@pytest.mark.parametrize("value", ["inf", "5", "-1", "nan", "1.5"])
def test_temperature_outside_0_to_1_is_400(server, value):
    error = openai_error(post(server, {"temperature": value}, JFK), 400, "temperature")
    assert "0 to 1" in error["message"]


def test_temperature_through_the_openai_client(client):
    with pytest.raises(BadRequestError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(file=f, model="whisper-1", temperature=5)
    assert info.value.body["param"] == "temperature"
    with open(shared_file("jfk.wav"), "rb") as f:
        ok = client.audio.transcriptions.create(file=f, model="whisper-1", temperature=0.2)
    assert "country" in ok.text


# -- rows 7 and 8: what an English-only model cannot do ---------------------------


def test_translation_with_an_english_only_model_is_400(client):
    with pytest.raises(BadRequestError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.translations.create(file=f, model="whisper-1")
    assert info.value.body["param"] == "model"
    assert info.value.body["code"] == "model_cannot_translate"


@pytest.mark.parametrize("language", ["xx", "fr"])
def test_other_language_on_an_english_only_model_is_400(client, language):
    with pytest.raises(BadRequestError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(file=f, model="whisper-1", language=language)
    assert info.value.body["param"] == "language"
    assert "English-only" in info.value.body["message"]


def test_english_on_an_english_only_model_is_fine(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        assert (
            "country"
            in client.audio.transcriptions.create(file=f, model="whisper-1", language="en").text
        )


def test_unknown_language_on_a_multilingual_model_names_the_field(server):
    error = openai_error(post(server, {"model": "test:base", "language": "xx"}, JFK), 400)
    assert error["param"] == "language"


# -- row 9: known-speaker references ----------------------------------------------


@pytest.mark.parametrize("kind", ["random bytes", "a 0.1 s clip"])
def test_bad_known_speaker_reference_names_the_field_not_the_spool(server, kind):
    if kind == "random bytes":
        clip = np.random.default_rng(0).bytes(3000)
    else:
        clip = wav_bytes(saywho.load_audio(shared_file("jfk.wav"))[:1600])
    url = "data:audio/wav;base64," + base64.b64encode(clip).decode()
    r = post(
        server,
        {
            "response_format": "diarized_json",
            "known_speaker_names[]": "Ann",
            "known_speaker_references[]": url,
        },
        JFK,
    )
    error = openai_error(r, 400, "known_speaker_references")
    assert "Ann" in error["message"]
    assert "uploads" not in error["message"] and str(server.data_dir) not in error["message"]


# -- row 10: a model the server cannot load is named as the client named it -------


def test_a_model_it_cannot_load_is_named(client):
    with pytest.raises(NotFoundError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(file=f, model="tiny")
    message = info.value.body["message"]
    assert "'tiny'" in message and "'model'" not in message


# -- row 11: /health is no request ------------------------------------------------


def test_health_counts_no_request(server):
    counts = [[m["requests"] for m in health(server)["models"]] for _ in range(3)]
    assert counts[0] == counts[1] == counts[2]


# -- row 13: segment ids from 0 ----------------------------------------------------


def test_verbose_json_segment_ids_start_at_0(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        plain = client.audio.transcriptions.create(
            file=f, model="whisper-1", response_format="verbose_json"
        )
    assert [s.id for s in plain.segments] == list(range(len(plain.segments)))
    with open(shared_file("two_speakers.wav"), "rb") as f:
        with_speakers = client.audio.transcriptions.create(
            file=f,
            model="whisper-1",
            response_format="verbose_json",
            extra_body={"num_speakers": 2},
        )
    assert [s.id for s in with_speakers.segments] == list(range(len(with_speakers.segments)))


# -- row 15: an empty file name; a Content-Length that is not a number -------------


def test_an_empty_filename_is_still_the_file(server):
    r = post(server, content=JFK, name="")
    assert r.status_code == 200, r.text
    assert "country" in r.json()["text"]


@pytest.mark.parametrize("length", [b"banana", b"-5", b"10, 20"])
def test_a_bad_content_length_is_an_openai_400(server, length):
    head = (
        b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: " + length + b"\r\n\r\n"
    )
    status, headers, body = split_answer(raw_request(server, head, b"--x--\r\n"))
    assert status == 400 and headers["content-type"] == "application/json"
    assert assert_openai_shape(body)["type"] == "invalid_request_error"


# -- row 2: form fields bounded when the body is chunked ---------------------------


def test_chunked_fields_are_bounded(server):
    boundary = "bound"

    def body():
        yield f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nwhisper-1\r\n'.encode()
        for i in range(40):  # 40 MB of text fields, over the 16 MB all fields may hold
            yield f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\n'.encode()
            yield b"a" * (1 << 20) + b"\r\n"
        yield f"--{boundary}--\r\n".encode()

    r = httpx.post(
        server.url + "/v1/audio/transcriptions",
        content=body(),  # a generator: sent chunked, no Content-Length
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        timeout=120,
    )
    error = openai_error(r, 413, code="fields_too_large")
    assert error["param"].startswith("f")


def test_too_many_parts_is_400(server):
    data = {"model": "whisper-1", **{f"f{i}": "x" for i in range(300)}}
    r = httpx.post(
        server.url + "/v1/audio/transcriptions",
        data=data,
        files={"file": ("a.wav", JFK, "audio/wav")},
        timeout=120,
    )
    openai_error(r, 400, code="too_many_parts")


# -- row 14: a body that stalls ---------------------------------------------------


def test_a_stalled_body_is_dropped_with_408(server):
    head = (
        b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 100000\r\n\r\n"
    )
    part = b'--x\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'
    # the server closes the connection after its answer, so recv ends
    status, _headers, body = split_answer(raw_request(server, head, part + b"\0" * 1000))
    assert status == 408
    assert assert_openai_shape(body)["code"] == "body_timeout"
    # the partial upload is gone with it
    assert list((server.data_dir / "uploads").iterdir()) == []


# -- row 4: jobs have their own bound ---------------------------------------------


def test_jobs_do_not_fill_the_request_queue(server):
    """--max-jobs 2: a third job is 429; a synchronous request still runs
    (queued jobs never counted against --max-queued)."""
    created = []
    try:
        for _ in range(2):
            r = httpx.post(
                server.url + "/v1/jobs",
                data={"model": "whisper-1", "response_format": "json"},
                files={"file": ("two.wav", shared_file("two_speakers.wav").read_bytes())},
                timeout=60,
            )
            assert r.status_code == 202, r.text
            created.append(r.json()["id"])
        third = httpx.post(
            server.url + "/v1/jobs",
            data={"model": "whisper-1"},
            files={"file": ("a.wav", JFK)},
            timeout=60,
        )
        openai_error(third, 429, code="too_many_jobs")
        assert int(third.headers["retry-after"]) >= 1
        r = post(server, {"response_format": "json"}, JFK)
        assert r.status_code == 200 and "country" in r.json()["text"]
    finally:
        for job_id in created:
            httpx.delete(f"{server.url}/v1/jobs/{job_id}", timeout=60)


# -- openai's newer fields: refused by name, never dropped -------------------------


@pytest.mark.parametrize("name", ["keywords", "languages", "no_such_field"])
def test_fields_saywho_does_not_use_are_refused(client, name):
    with pytest.raises(BadRequestError) as info, open(shared_file("jfk.wav"), "rb") as f:
        client.audio.transcriptions.create(file=f, model="whisper-1", extra_body={name: "Kennedy"})
    assert info.value.body["param"] == name
    assert info.value.body["code"] == "unknown_parameter"


def test_headers_that_never_finish_lose_their_connection(server):
    """The slow-headers variant of row 14: the connection is closed after
    --body-timeout-s, with nothing read as a request."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as s:
        s.sendall(b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        assert s.recv(65536) == b""  # closed by the server (a timeout here is a failure)
