"""Silence is silent: process() writes no text and finds no speaker where
nobody spoke (saywho.api.silence), while transcribe() stays faster-whisper's."""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.audio.decode import SAMPLE_RATE

from .weights import test_model_dir

MINUTE = 60 * SAMPLE_RATE


@pytest.fixture(scope="module")
def pipeline():
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        yield p


def digital_silence() -> np.ndarray:
    return np.zeros(MINUTE, np.float32)


def low_noise() -> np.ndarray:
    """White noise at -60 dBFS RMS (a quiet room through a cheap microphone),
    the level where tiny.en writes " ." segment after segment."""
    rng = np.random.default_rng(26)
    return (rng.standard_normal(MINUTE) * 1e-3).astype(np.float32)


def test_whisper_alone_writes_something_for_silence(pipeline):
    """What process() guards against, as faster-whisper would write it."""
    segments, _ = pipeline.transcribe(digital_silence(), beam_size=5)
    assert "".join(s.text for s in segments).strip(), "Whisper no longer hallucinates here"
    assert all(s.no_speech_prob > 0.6 for s in segments)


@pytest.mark.parametrize("make", [digital_silence, low_noise])
def test_process_finds_no_text_and_no_speaker(pipeline, make):
    result = pipeline.process(make(), beam_size=5)
    assert result.text == "" and result.segments == []
    assert result.speakers == [] and result.turns == []
    assert result.duration == pytest.approx(60.0)
    assert "transcription" in result.performance["stages"]


@pytest.mark.parametrize("make", [digital_silence, low_noise])
def test_transcribing_only_uses_silero_to_hear_silence(pipeline, make):
    result = pipeline.process(make(), diarize=False, beam_size=5)
    assert result.text == "" and result.segments == [] and result.turns is None


def test_the_guard_can_be_turned_off(pipeline):
    result = pipeline.process(digital_silence(), beam_size=5, skip_silence=False)
    assert result.text.strip()


def test_speech_then_silence_keeps_the_speech_only(pipeline, jfk_wav):
    """A segment Whisper rates likely silent, where no speech turn lies, goes;
    JFK's words all stay."""
    speech = saywho.load_audio(jfk_wav)
    audio = np.concatenate([speech, digital_silence()[: 40 * SAMPLE_RATE]])
    raw, _ = pipeline.transcribe(audio, beam_size=5, word_timestamps=True)
    invented = [s for s in raw if s.start >= 11.0]
    assert invented and all(s.no_speech_prob > 0.6 for s in invented)  # " You" at 44.5 s
    result = pipeline.process(audio, beam_size=5)
    text = result.text.lower().replace(",", "")
    assert "ask not what your country can do for you" in text
    assert all(s.end <= 11.5 for s in result.segments), result.text
    spoken = "".join(s.text for s in raw if s.start < 11.0)
    assert "".join(s.text for s in result.segments) == spoken
    assert result.speakers == ["SPEAKER_00"]
