"""Known speakers through the openai client: clips cut from the conversation
as data URLs, and diarized_json gives their names to the right speakers.

Needs saywho's ``Pipeline.process(known_speakers=...)``."""

from __future__ import annotations

import base64
from collections import Counter

import numpy as np
import pytest
from openai import OpenAI

import saywho
from saywho.formats.rttm import read_rttm

from .client_audio import wav_bytes
from .conftest import shared_file
from .server_process import Server

# stretches where the reference (two_speakers.rttm) has one speaker alone
CLIPS = {"Ann": (11.1, 14.4, "speaker90"), "Bob": (22.0, 27.5, "speaker91")}


def data_url(samples: np.ndarray) -> str:
    return "data:audio/wav;base64," + base64.b64encode(wav_bytes(samples)).decode("ascii")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("known") / "data").start()
    yield srv
    srv.stop()


def test_diarized_json_names_the_known_speakers(server):
    audio = saywho.load_audio(shared_file("two_speakers.wav"))
    rate = saywho.SAMPLE_RATE
    names = list(CLIPS)
    references = [data_url(audio[int(a * rate) : int(b * rate)]) for a, b, _ in CLIPS.values()]
    client = OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    with open(shared_file("two_speakers.wav"), "rb") as f:
        result = client.audio.transcriptions.create(
            file=f,
            model="gpt-4o-transcribe-diarize",
            response_format="diarized_json",
            known_speaker_names=names,
            known_speaker_references=references,
        )
    speakers = Counter(s.speaker for s in result.segments)
    assert set(speakers) - {"UNKNOWN"} == {"Ann", "Bob"}, speakers
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    expected = {name: who for name, (_a, _b, who) in CLIPS.items()}
    checked = agree = 0
    for s in result.segments:
        mid = (s.start + s.end) / 2
        talking = {t.speaker for t in reference if t.start <= mid < t.end}
        if len(talking) == 1 and s.speaker in expected:
            checked += 1
            agree += expected[s.speaker] in talking
    assert checked >= 6 and agree >= 0.8 * checked
