"""Transcribing the speech only: joined regions (read a stretch at a time from
the recording when long), timestamps moved back to the recording's clock,
and process(vad=True) on speech with a noise gap."""

from __future__ import annotations

import numpy as np

import saywho
from saywho.audio.speech import JoinedSpeech, SpeechMap
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


def test_joined_speech_reads_what_collect_joins(tmp_path):
    """Any slice of JoinedSpeech is the same slice of the joined array, read
    from the recording (here a memmap over the audio store) stretch by
    stretch; the recording stays on disk."""
    from saywho.audio.store import on_disk

    regions = [(5, 1000), (1000, 1001), (1500, 40_000), (40_500, 160_000), (170_000, 176_000)]
    m = SpeechMap(regions, in_samples=True)
    rng = np.random.default_rng(3)
    store = tmp_path / "samples.f32"
    rng.standard_normal(176_000).astype(np.float32).tofile(store)
    recording = np.memmap(store, dtype=np.float32, mode="r")
    joined, lazy = m.collect(recording), m.joined(recording)
    assert isinstance(lazy, JoinedSpeech) and on_disk(lazy.samples)
    assert lazy.size == len(lazy) == joined.size == sum(b - a for a, b in regions)
    seams = [0, 995, 996, 39_496, 158_996, joined.size]
    cuts = [(a, b) for a in seams for b in seams if a <= b]
    cuts += [(a, a + 3000) for a in rng.integers(0, joined.size, 30)] + [(-100, None), (None, 7)]
    for a, b in cuts:
        piece = lazy[a:b]
        assert piece.dtype == np.float32 and np.array_equal(piece, joined[a:b]), (a, b)
    assert lazy[joined.size + 5 : joined.size + 9].size == 0
    empty = SpeechMap([], in_samples=True).joined(recording)
    assert empty.size == 0 and empty[0:100].size == 0


def test_long_joined_speech_is_read_a_window_at_a_time(whisper_models, recordings, monkeypatch):
    """vad_filter on speech joined longer than the in-memory threshold (here
    lowered to 1 s): the log-mel reads the joined speech a window at a time
    from the recording, and the tokens are those of the joined array."""
    from saywho.whisper import sequential
    from saywho.whisper.windowed_mel import WindowedLogMel

    audio = recordings["short"]  # 42 s: two windows of speech
    model = whisper_models["tiny.en"]
    held, _ = model.transcribe(audio, beam_size=1, vad_filter=True)
    held = list(held)
    read = []
    monkeypatch.setattr(sequential, "IN_MEMORY_SECONDS", 1.0)
    monkeypatch.setattr(
        sequential, "WindowedLogMel", lambda s, *a: read.append(s) or WindowedLogMel(s, *a)
    )
    lazy, _ = model.transcribe(audio, beam_size=1, vad_filter=True)
    lazy = list(lazy)
    assert len(read) == 1 and isinstance(read[0], JoinedSpeech)
    assert len(held) > 1
    assert [s.tokens for s in lazy] == [s.tokens for s in held]
    assert [(s.start, s.end) for s in lazy] == [(s.start, s.end) for s in held]


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
