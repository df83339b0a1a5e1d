"""pyannote's pipelines by name, end to end, offline: Pipeline(diarization=NAME),
saywho.diarize(pipeline=NAME) and the CLI's --diarization, from the hand-built
Hugging Face cache of tests/pyannote_fixtures.py (real segmentation-3.0 and
PLDA, WeSpeaker ResNet34 on random weights of the real shapes: the speakers
found mean nothing, so these tests check settings, structure and memory)."""

from __future__ import annotations

import wave

import numpy as np
import pytest

import saywho
from saywho.formats.output_names import output_dir

from .conftest import shared_file
from .pyannote_fixtures import (  # noqa: F401 (fixtures)
    hub_root,
    offline,
    resnet_bin,
)
from .weights import test_model_dir

V31 = "pyannote/speaker-diarization-3.1"
COMMUNITY = "pyannote/speaker-diarization-community-1"


SECONDS = 16  # both voices speak by then; seven 10 s chunks keep the random ResNet's cost low


@pytest.fixture(scope="module")
def audio():
    return saywho.load_audio(shared_file("two_speakers.wav"))[: 16000 * SECONDS]


@pytest.fixture
def excerpt(tmp_path, audio):
    """The same 16 s as a 16-bit WAV file, for the command line."""
    path = tmp_path / "excerpt.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes())
    return path


@pytest.mark.parametrize("name", [V31, COMMUNITY])
def test_pipelines_run_end_to_end_and_return_every_byte(offline, audio, name):  # noqa: F811
    from saywho.diarization.vbx import VBxClustering

    with saywho.Pipeline(device="cpu", diarization=name, log_memory=False) as p:
        result = p.diarize(audio)
        d = p._diarizer
        if name == COMMUNITY:
            assert isinstance(d.clustering, VBxClustering)
            assert (d.clustering.threshold, d.clustering.fa, d.clustering.fb) == (0.6, 0.07, 0.8)
        else:
            assert d.clustering is None
            assert (d.threshold, d.min_cluster_size) == (0.7045654963945799, 12)
        assert d.step == 1.0
        # pyannote's own floors: none on turns, its config's 0 on pauses
        assert (d.min_duration_on, d.min_duration_off) == (0.0, 0.0)
        assert p.memory().allocated > 0
        two = p.diarize(audio, num_speakers=2)
    assert p.memory().allocated == 0 and p.memory().reserved == 0
    for r in (result, two):
        assert r.turns and r.embeddings.shape == (len(r.speakers), 256)
        assert all(0 <= t.start < t.end <= r.duration + 1e-6 for t in r.turns)
        assert {t.speaker for t in r.turns} == set(r.speakers)
        assert all(b.start >= a.end - 1e-9 for a, b in zip(r.exclusive, r.exclusive[1:]))
    assert len(two.speakers) == 2


def test_saywho_diarize_takes_a_pipeline_name(offline, audio):  # noqa: F811
    result = saywho.diarize(audio[: 16000 * 11], pipeline=COMMUNITY, num_speakers=2)
    assert result.turns and result.embeddings.shape[1] == 256
    with pytest.raises(saywho.OptionError, match="not both"):
        saywho.diarize(audio, pipeline=COMMUNITY, segmentation="x.onnx")


def test_cli_diarization_by_name(offline, capsys, tmp_path, excerpt):  # noqa: F811
    from saywho.cli.main import main

    code = main(
        [
            str(excerpt),
            "--model",
            str(test_model_dir("tiny.en")),
            "--device",
            "cpu",
            "--diarization",
            V31,
            "--num-speakers",
            "2",
            "-q",
            "-o",
            str(tmp_path / "out"),
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "2 speakers" in out.out
    assert (output_dir(tmp_path / "out", excerpt) / "transcript.rttm").is_file()
    code = main(
        [
            str(shared_file("jfk.wav")),
            "--model",
            str(test_model_dir("tiny.en")),
            "--diarization",
            "x/y",
        ]
    )
    assert code == 2 and "known diarization pipeline" in capsys.readouterr().err
