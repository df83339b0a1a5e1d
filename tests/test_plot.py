"""Result.plot: speakers on a timeline, from hand-made and real results."""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.api.speaker_words import SpeakerSegment, SpeakerWord
from saywho.formats.rttm import Turn, read_rttm

from .conftest import shared_file


def _result() -> saywho.Result:
    words = [
        SpeakerWord(0.5, 0.9, " hello", 0.9, "A"),
        SpeakerWord(1.0, 1.4, " there", 0.8, "A"),
        SpeakerWord(2.0, 2.6, " goodbye", 0.7, "B"),
    ]
    return saywho.Result(
        source="/recordings/meeting.wav",
        duration=3.0,
        segments=[
            SpeakerSegment(0.5, 1.4, " hello there", "A", words[:2]),
            SpeakerSegment(2.0, 2.6, " goodbye", "B", words[2:]),
        ],
        speakers=["A", "B"],
        turns=[Turn(0.4, 1.5, "A"), Turn(1.9, 2.8, "B")],
    )


def test_png_has_a_colour_per_speaker(tmp_path):
    from matplotlib.image import imread

    path = _result().plot(tmp_path / "t.png", width=8.0, dpi=50)
    assert path == tmp_path / "t.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = imread(path)
    assert image.shape[1] == 400  # 8 inches at 50 dpi
    rgb = (image[..., :3] * 255).round().astype(int).reshape(-1, 3)
    # the default cycle's first two colours, blended by the bars' alpha on white
    blue, orange = np.array([31, 119, 180]), np.array([255, 127, 14])

    def near(c):
        blended = 0.85 * c + 0.15 * 255
        return np.sum(np.all(np.abs(rgb - blended) <= 3, axis=1))

    assert near(blue) > 100 and near(orange) > 100


def test_svg_names_speakers_and_words(tmp_path):
    svg = _result().plot(tmp_path / "t.svg").read_text()
    assert svg.lstrip().startswith("<?xml")
    for text in ("meeting.wav", "hello", "goodbye"):
        assert text in svg


def test_real_reference_turns(tmp_path):
    (turns,) = read_rttm(shared_file("two_speakers.rttm")).values()
    result = saywho.Result(
        source="two_speakers.wav",
        duration=30.0,
        speakers=sorted({t.speaker for t in turns}),
        turns=turns,
    )
    path = result.plot(tmp_path / "ref.pdf", start=5.0, end=20.0)
    assert path.read_bytes()[:5] == b"%PDF-"


def test_bad_requests(tmp_path):
    with pytest.raises(saywho.OptionError, match="t.docx"):
        _result().plot(tmp_path / "t.docx")
    with pytest.raises(saywho.OptionError):
        _result().plot(tmp_path / "t.png", start=2.0, end=1.0)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_drawing_leaves_no_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    def broken(self, *args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        _result().plot(tmp_path / "t.png")
    assert list(tmp_path.iterdir()) == []
