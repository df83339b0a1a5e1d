"""Embeddings reused between overlapping chunks (Diarizer(embedding_step=...),
diarization/reuse.py): which local speakers continue their anchor's, and the
diarizer on real speech with the bundled models."""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.diarization import Diarizer
from saywho.diarization.reuse import match_anchor
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.rttm import read_rttm
from saywho.models.bundled import resolve_embedding, resolve_segmentation

from .conftest import shared_file
from .weights import test_diarization_models

FRAMES = 589


def activity(*runs: tuple[int, int, int]) -> np.ndarray:
    """[FRAMES, 3] with speaker s active over [a, b) for each (s, a, b)."""
    x = np.zeros((FRAMES, 3), np.uint8)
    for s, a, b in runs:
        x[a:b, s] = 1
    return x


def test_a_continuing_speaker_finds_its_anchor_speaker_whatever_its_index():
    shift = 59  # one 1 s step
    anchor = activity((0, 100, 400), (2, 450, 589))
    # the same voices seen 59 frames later, under other local indices
    chunk = activity((1, 41, 341), (0, 391, 589))
    assert match_anchor(chunk, anchor, shift).tolist() == [2, 0, -1]


def test_a_voice_the_anchor_never_heard_is_embedded_anew():
    shift = 177  # three steps: the chunk's last 177 frames are new
    anchor = activity((0, 0, 589))
    chunk = activity((0, 0, 412), (1, 430, 589))
    assert match_anchor(chunk, anchor, shift).tolist() == [0, -1, -1]


def test_a_speaker_mostly_outside_the_shared_stretch_is_not_matched():
    shift = 295  # half a window
    anchor = activity((0, 500, 589))
    chunk = activity((0, 205, 589))  # 89 frames shared of 384 active
    assert match_anchor(chunk, anchor, shift).tolist() == [-1, -1, -1]


def test_two_speakers_cannot_take_one_anchor_speaker():
    shift = 59
    anchor = activity((0, 0, 589))
    # the anchor heard one voice where the chunk tells two apart: the larger
    # takes it, the other is embedded anew
    chunk = activity((0, 0, 300), (1, 300, 530))
    assert match_anchor(chunk, anchor, shift).tolist() == [0, -1, -1]


def test_chunks_that_share_no_frames_match_nothing():
    anchor = activity((0, 0, 589))
    assert (match_anchor(anchor, anchor, FRAMES) == -1).all()
    assert (match_anchor(anchor, anchor, FRAMES + 10) == -1).all()


@pytest.fixture(scope="module")
def two_speakers():
    audio = saywho.load_audio(shared_file("two_speakers.wav"))
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    return audio, reference


class Recorded(Diarizer):
    """Keeps the (chunk, speaker) embeddings the clustering was given."""

    def _segment_and_embed(self, audio, starts, progress):
        out = super()._segment_and_embed(audio, starts, progress)
        self.recorded = out
        return out


def test_reused_embeddings_are_their_anchors_and_the_voices_stay_apart(two_speakers):
    audio, reference = two_speakers
    seg, emb = resolve_segmentation(None), resolve_embedding(None)
    with Recorded(seg, emb, embedding_step=3.0) as d:
        result = d(audio)
        active, embeddings, trainable, _ = d.recorded
    with Recorded(seg, emb) as exact:
        exact(audio)
        _, exact_embeddings, exact_trainable, _ = exact.recorded
    # the same pairs have an embedding and are clustered
    assert (np.isnan(embeddings[..., 0]) == np.isnan(exact_embeddings[..., 0])).all()
    assert (trainable == exact_trainable).all()
    # anchors (every third chunk) computed their own as before (to the last
    # bits: CAM++ packs the sequences of a call otherwise, and sgemm's sums
    # follow the rows of the call)
    anchors = np.arange(0, len(active), 3)
    both = np.isfinite(exact_embeddings[anchors])
    assert np.abs(embeddings[anchors][both] - exact_embeddings[anchors][both]).max() <= 1e-5
    # most chunks between anchors took an anchor's row (or the mean of the
    # anchors' rows either side); the rest were embedded as before
    reused = total = 0
    for c in range(len(active)):
        if c % 3 == 0:
            continue
        a = c - c % 3
        near = [embeddings[a, k] for k in range(3)]
        if a + 3 < len(active):
            near += [
                (embeddings[a, k] + embeddings[a + 3, m]) / 2 for k in range(3) for m in range(3)
            ]
            near += [embeddings[a + 3, m] for m in range(3)]
        for j in range(3):
            if np.isfinite(embeddings[c, j, 0]):
                total += 1
                if any(np.allclose(embeddings[c, j], e, rtol=0, atol=1e-6) for e in near):
                    reused += 1
                else:
                    assert np.abs(embeddings[c, j] - exact_embeddings[c, j]).max() <= 1e-5
    print(f"reused {reused} of {total} embeddings between anchors")
    assert reused >= 0.7 * total
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    assert diarization_error_rate(reference, result.turns, collar=0.0).der <= 0.10


def test_embedding_step_out_of_range_is_an_option_error():
    seg, emb = resolve_segmentation(None), resolve_embedding(None)
    for bad in (0.0, 1.5, 2.05, 11.0, -1.0):
        with pytest.raises(saywho.OptionError, match="embedding_step"):
            Diarizer(seg, emb, embedding_step=bad)
    with pytest.raises(saywho.OptionError, match="embedding_step"):
        Diarizer(seg, emb, step=2.0, embedding_step=3.0)  # not a multiple
    ge2e_seg, ge2e = test_diarization_models()
    with pytest.raises(saywho.OptionError, match="GE2E"):
        Diarizer(ge2e_seg, ge2e, embedding_step=2.0)
    with Diarizer(seg, emb, step=2.0, embedding_step=4.0) as d:
        assert d.every == 2


def test_pipeline_takes_whole_seconds_only():
    for bad in (1.5, 0, 11, True, "2"):
        with pytest.raises(saywho.OptionError, match="embedding_step"):
            saywho.Pipeline(model=None, device="cpu", embedding_step=bad)
    with saywho.Pipeline(model=None, device="cpu", embedding_step=2) as p:
        result = p.diarize(saywho.load_audio(shared_file("two_speakers.wav")))
        assert p._diarizer.every == 2
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
