"""``stream=true`` through OpenAI's own client: the events go out while the
run decodes, not after it; with speakers the labelled segments follow the
deltas; the done event carries usage; errors keep their status or come as an
error event."""

from __future__ import annotations

import time
import wave

import httpx
import numpy as np
import pytest
from openai import BadRequestError, OpenAI

import saywho

from .conftest import shared_file
from .server_process import Server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("streaming") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=server.url + "/v1", api_key="anything", max_retries=0, timeout=600)


@pytest.fixture(scope="module")
def long_speech(tmp_path_factory):
    """jfk.wav eight times over (88 s): several 30 s windows, so decoding
    goes on well after the first window's text is out."""
    samples = saywho.load_audio(shared_file("jfk.wav"))
    pcm = (np.clip(np.tile(samples, 8), -1.0, 1.0) * 32767).astype("<i2")
    path = tmp_path_factory.mktemp("long") / "jfk-x8.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(saywho.SAMPLE_RATE)
        w.writeframes(pcm.tobytes())
    return path, len(samples) * 8 / saywho.SAMPLE_RATE


def running(server) -> int:
    return httpx.get(server.url + "/health", timeout=30).json()["queue"]["running"]


def test_deltas_arrive_while_the_run_still_decodes(server, client, long_speech):
    """Proof by order, not by timing: when the first delta reaches the client,
    the server still reports the run under way (the later windows are not
    decoded yet); only after the done event does it report none running."""
    path, seconds = long_speech
    with open(path, "rb") as f:
        stream = client.audio.transcriptions.create(file=f, model="whisper-1", stream=True)
        events, running_at_first = [], None
        for event in stream:
            if event.type == "transcript.text.delta" and running_at_first is None:
                running_at_first = running(server)
            events.append(event)
    assert running_at_first == 1
    assert running(server) == 0
    deltas = [e for e in events if e.type == "transcript.text.delta"]
    done = events[-1]
    assert done.type == "transcript.text.done" and events.count(done) == 1
    assert len(deltas) >= 4 and "".join(e.delta for e in deltas) == done.text
    assert done.text.lower().count("country") >= 8
    assert done.usage.type == "duration" and done.usage.seconds == pytest.approx(seconds)


def test_a_client_that_leaves_stops_its_run(server, long_speech):
    path, _seconds = long_speech
    with (
        open(path, "rb") as f,
        httpx.stream(
            "POST",
            server.url + "/v1/audio/transcriptions",
            files={"file": ("left.wav", f, "audio/wav")},
            data={"model": "whisper-1", "stream": "true"},
            timeout=300,
        ) as r,
    ):
        for line in r.iter_lines():
            if line.startswith("data: "):  # the first delta: then hang up
                break
    for _ in range(1200):
        if running(server) == 0:
            break
        time.sleep(0.1)
    assert running(server) == 0
    assert "a streaming client left: its run stopped (left.wav)" in server.log()
    assert list((server.data_dir / "uploads").iterdir()) == []


def test_stream_sends_openais_events(client):
    with open(shared_file("jfk.wav"), "rb") as f:
        stream = client.audio.transcriptions.create(
            file=f, model="whisper-1", stream=True, include=["logprobs"]
        )
        events = list(stream)
    assert [e.type for e in events][-1] == "transcript.text.done"
    deltas = [e for e in events if e.type == "transcript.text.delta"]
    assert deltas and "".join(e.delta for e in deltas) == events[-1].text
    assert all(e.segment_id.startswith("seg_") for e in deltas)
    assert "country" in events[-1].text
    # logprobs per word, in the deltas and in the done event
    words = [p.token for e in deltas for p in e.logprobs]
    assert words == [p.token for p in events[-1].logprobs] and len(words) >= 20
    assert events[-1].usage.seconds == pytest.approx(11.0)


def test_stream_with_speakers_sends_deltas_then_segments(client):
    with open(shared_file("two_speakers.wav"), "rb") as f:
        stream = client.audio.transcriptions.create(
            file=f, model="gpt-4o-transcribe-diarize", response_format="diarized_json", stream=True
        )
        events = list(stream)
    types = [e.type for e in events]
    first_segment = types.index("transcript.text.segment")
    assert "transcript.text.delta" in types[:first_segment]
    assert set(types[first_segment:-1]) == {"transcript.text.segment"}
    assert types[-1] == "transcript.text.done"
    segments = [e for e in events if e.type == "transcript.text.segment"]
    assert {e.speaker for e in segments} - {"UNKNOWN"} == {"A", "B"}
    # the deltas' words are the speaker segments' words, cut elsewhere
    delta_words = "".join(e.delta for e in events if e.type == "transcript.text.delta").split()
    assert delta_words == " ".join(e.text for e in segments).split() == events[-1].text.split()
    assert events[-1].usage.type == "duration"
    assert events[-1].usage.seconds == pytest.approx(30.0, abs=0.1)


def test_progress_goes_out_as_comments_clients_ignore(server):
    """The first line is a progress comment (the run started; it also keeps
    proxies from timing out a long diarization); the events follow."""
    with (
        open(shared_file("jfk.wav"), "rb") as f,
        httpx.stream(
            "POST",
            server.url + "/v1/audio/transcriptions",
            files={"file": ("jfk.wav", f, "audio/wav")},
            data={"model": "whisper-1", "stream": "true", "beam_size": "1"},
            timeout=300,
        ) as r,
    ):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    # the first comment is the decode stage, telling the audio's length
    assert lines[0].startswith(": progress decode 11.0/11.0")
    assert lines[-1].startswith('data: {"type": "transcript.text.done"')


def test_bad_audio_in_a_stream_is_still_a_400(client):
    with pytest.raises(BadRequestError) as info:
        client.audio.transcriptions.create(
            file=("notes.wav", b"not audio at all " * 100, "audio/wav"),
            model="whisper-1",
            stream=True,
        )
    assert info.value.status_code == 400
    assert info.value.body["param"] == "file" and "notes.wav" in info.value.body["message"]


def test_bad_option_in_a_stream_is_still_a_400(server):
    r = httpx.post(
        server.url + "/v1/audio/transcriptions",
        files={"file": ("jfk.wav", shared_file("jfk.wav").read_bytes(), "audio/wav")},
        data={"model": "whisper-1", "stream": "true", "beam_size": "0"},
        timeout=300,
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_value"
    # nothing left in the spool, streamed or refused
    assert list((server.data_dir / "uploads").iterdir()) == []
