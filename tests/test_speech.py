"""Voice activity for transcription: regions from the segmentation model,
joined speech, and timestamps mapped back to the recording's clock."""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.models.test_weights import test_model_dir
from saywho.rttm import Turn
from saywho.speech import SpeechMap, VadOptions, speech_regions
from saywho.whisper.transcribe import Segment, Word


def test_regions_are_padded_and_short_pauses_closed():
    turns = [Turn(1.0, 2.0, "A"), Turn(1.5, 3.0, "B"), Turn(4.0, 5.0, "A"), Turn(9.0, 9.5, "B")]
    assert speech_regions(turns, 9.6) == [(0.6, 5.4), (8.6, 9.6)]
    assert speech_regions(turns, 20.0, VadOptions(pad=0.0, min_silence=0.5)) == [
        (1.0, 3.0),
        (4.0, 5.0),
        (9.0, 9.5),
    ]
    assert speech_regions([], 10.0) == []
    with pytest.raises(saywho.OptionError):
        VadOptions(pad=-1.0)


def test_times_map_back_across_the_cuts():
    m = SpeechMap([(1.0, 3.0), (10.0, 11.0)])
    samples = np.arange(16000 * 12, dtype=np.float32)
    joined = m.collect(samples)
    assert len(joined) == 3 * 16000 and joined[0] == 16000 and joined[2 * 16000] == 160000
    assert m.to_recording(0.5) == 1.5
    assert m.to_recording(2.0) == 10.0  # a start at the seam begins the next stretch
    assert m.to_recording(2.0, is_end=True) == 3.0  # an end at the seam closes the first
    assert m.to_recording(2.5) == 10.5
    words = [Word(1.8, 2.0, " one", 0.9), Word(2.0, 2.4, " two", 0.8)]
    (seg,) = m.restore([Segment(0, 0, 1.8, 2.4, " one two", [], -0.1, 1.0, 0.0, 0.0, words)])
    assert (seg.start, seg.end) == (2.8, 10.4)
    assert [(w.start, w.end) for w in seg.words] == [(2.8, 3.0), (10.0, 10.4)]


def test_vad_skips_the_noise_and_keeps_the_words(recordings):
    """The assembled recording with 8 s of faint noise at 40 s: with vad the
    noise is never transcribed, and the speech still is."""
    audio = recordings["long2gap"]
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        result = p.process(audio, vad=True, beam_size=1, num_speakers=5)
    assert "vad" in result.performance["stages"]
    words = [w for s in result.segments for w in s.words]
    # Whisper's word times are loose by a few hundred ms at the edges of the gap
    assert not [w for w in words if 41.0 < (w.start + w.end) / 2 < 47.0]
    text = result.text.lower()
    assert "new jersey" in text and "ask not what your country" in text
    assert result.options["vad"] is True
