"""A Result in a notebook: to_pandas tables, the HTML repr (with the
timeline picture when matplotlib is there), and tqdm.auto progress bars."""

from __future__ import annotations

import io
import re
import sys

import pytest

import saywho
from saywho.api.speaker_words import SpeakerSegment, SpeakerWord
from saywho.api.stage_progress import ProgressBar, TqdmProgress, progress_bar
from saywho.formats.rttm import Turn


def _result() -> saywho.Result:
    a = [SpeakerWord(1.0, 1.5, " Hello", 0.9, "Ann"), SpeakerWord(1.5, 2.0, " <there>", 0.8, "Ann")]
    b = [SpeakerWord(2.5, 3.0, " Hi.", 0.7, "SPEAKER_01")]
    return saywho.Result(
        source="talk.wav",
        duration=4.0,
        language="en",
        segments=[
            SpeakerSegment(1.0, 2.0, " Hello <there>", "Ann", a),
            SpeakerSegment(2.0, 2.2, " again.", "Ann"),
            SpeakerSegment(2.5, 3.0, " Hi.", "SPEAKER_01", b),
        ],
        speakers=["Ann", "SPEAKER_01"],
        turns=[Turn(0.9, 2.3, "Ann"), Turn(2.4, 3.1, "SPEAKER_01")],
    )


def test_to_pandas_gives_segments_words_and_turns():
    result = _result()
    segments = result.to_pandas()
    assert list(segments.columns) == ["start", "end", "speaker", "text"]
    assert segments["text"].tolist() == ["Hello <there>", "again.", "Hi."]
    assert segments["speaker"].tolist() == ["Ann", "Ann", "SPEAKER_01"]
    words = result.to_pandas("words")
    assert list(words.columns) == ["start", "end", "speaker", "word", "probability", "segment"]
    assert words["word"].tolist() == ["Hello", "<there>", "Hi."]
    assert words["segment"].tolist() == [0, 0, 2]
    assert words["probability"].tolist() == [0.9, 0.8, 0.7]
    turns = result.to_pandas("turns")
    assert turns["duration"].round(6).tolist() == [1.4, 0.7]
    assert str(turns["start"].dtype) == "float64"
    with pytest.raises(saywho.OptionError, match="segments, words, turns"):
        result.to_pandas("sentences")
    empty = saywho.Result().to_pandas("turns")
    assert len(empty) == 0 and list(empty.columns) == ["start", "end", "speaker", "duration"]


def test_to_pandas_without_pandas_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if it were not installed
    with pytest.raises(ImportError, match="needs pandas.*pip install pandas"):
        _result().to_pandas()


def test_html_repr_shows_turns_text_and_the_timeline():
    page = _result()._repr_html_()
    assert "talk.wav" in page and "speakers: Ann, SPEAKER_01" in page
    # one row per speaker turn: Ann's two segments join
    assert page.count("<tr><td") == 2
    assert "Hello &lt;there&gt; again." in page and "<there>" not in page
    assert "data:image/png;base64," in page


def test_html_repr_without_matplotlib_still_has_the_table(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    page = _result()._repr_html_()
    assert "<img" not in page and page.count("<tr><td") == 2
    assert "(no speech transcribed)" in saywho.Result()._repr_html_()


def test_progress_bar_is_tqdm_auto_when_tqdm_is_there(capsys):
    bar = progress_bar("talk.wav")
    assert isinstance(bar, TqdmProgress)
    for stage in ("decode", "diarization", "diarization", "transcribe"):
        bar(stage, 1, 2)
    bar("transcribe", 2, 2)
    bar.close()
    drawn = capsys.readouterr().err
    assert "talk.wav diarization" in drawn and "talk.wav transcribe" in drawn
    assert "100%" in drawn


def test_progress_bar_falls_back_to_saywhos_own(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    stream = io.StringIO()
    bar = progress_bar("talk.wav", stream)
    assert isinstance(bar, ProgressBar)
    bar("decode", 1, 1)
    bar.close()
    assert re.fullmatch(
        r"talk\.wav  decode done in 0\.\d s \(2%, 0:00:00 elapsed, ETA ~0:00:00\)\n",
        stream.getvalue(),
    )
