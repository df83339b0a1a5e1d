"""Transcribing the speech only: joined regions, timestamps moved back to the
recording's clock, and process(vad=True) on speech with a noise gap."""

from __future__ import annotations

import numpy as np

import saywho
from saywho.speech import SpeechMap
from saywho.whisper.segments import Segment, Word

from .weights import test_model_dir


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
    # each word moves with the stretch that holds its middle
    assert [(w.start, w.end) for w in seg.words] == [(2.8, 3.0), (10.0, 10.4)]


def test_vad_skips_the_noise_and_keeps_the_words(recordings):
    """The assembled recording with 8 s of faint noise at 40 s: with vad the
    noise is never transcribed, and the speech still is."""
    audio = recordings["long2gap"]
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        result = p.process(audio, vad=True, beam_size=1, num_speakers=5)
    assert result.options["vad"] is True
    words = [w for s in result.segments for w in s.words]
    # Whisper's word times are loose by a few hundred ms at the edges of the gap
    assert not [w for w in words if 41.0 < (w.start + w.end) / 2 < 47.0]
    text = result.text.lower()
    assert "new jersey" in text and "ask not what your country" in text
    assert result.options["vad"] is True
