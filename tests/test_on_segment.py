"""``on_segment``: Pipeline.transcribe and Pipeline.process tell each segment
as soon as it is decoded (what ``saywho serve`` streams), the same segments
they return, on the recording's clock with the VAD too."""

from __future__ import annotations

import numpy as np
import pytest

import saywho

from .conftest import shared_file
from .weights import test_model_dir


@pytest.fixture(scope="module")
def pipeline():
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu") as p:
        yield p


@pytest.fixture(scope="module")
def jfk_three_times():
    """33 s of real speech: more than one 30 s window."""
    return np.tile(saywho.load_audio(shared_file("jfk.wav")), 3)


@pytest.mark.parametrize("vad_filter", [False, True])
def test_each_segment_is_told_before_the_next_window(pipeline, jfk_three_times, vad_filter):
    log = []
    segments, _info = pipeline.transcribe(
        jfk_three_times,
        beam_size=1,
        vad_filter=vad_filter,
        progress=lambda stage, done, total: log.append(("window", done)),
        on_segment=lambda s: log.append(("segment", s)),
    )
    heard = [item for kind, item in log if kind == "segment"]
    assert heard == segments and len(segments) >= 3  # the same objects, times restored
    windows = [i for i, (kind, done) in enumerate(log) if kind == "window" and 0 < done < 33]
    # a later window starts only after the first window's segments were told
    assert windows and log[windows[0] - 1][0] == "segment"
    assert segments[-1].end > 30.0


def test_an_exception_in_on_segment_stops_the_run(pipeline, jfk_three_times):
    class Enough(Exception):
        pass

    def stop(_segment):
        raise Enough

    with pytest.raises(Enough):
        pipeline.transcribe(jfk_three_times, beam_size=1, on_segment=stop)


def test_process_tells_the_segments_it_keeps_before_the_speakers(pipeline):
    heard = []
    result = pipeline.process(shared_file("two_speakers.wav"), beam_size=1, on_segment=heard.append)
    assert heard and all(getattr(s, "speaker", None) is None for s in heard)
    # the speakers' segments are Whisper's, cut where the speaker changes
    told = " ".join(s.text for s in heard).split()
    assert told == " ".join(s.text for s in result.segments).split()
