"""Word timestamps against faster-whisper's golden outputs (same weights).

Words, their start and end and the segment bounds must be equal; word
probabilities within 1e-3 (they differ in the fifth decimal: float32 sums).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from saywho.whisper.word_dtw import negative_dtw

GOLDEN = Path(__file__).parent / "data" / "golden_words"


CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))
EMULATED_CASES = ["jfk_tiny.en_beam5_words"]  # the GPU code in CI, on the emulator


@pytest.mark.parametrize(
    "case, device",
    [(c, "cpu") for c in CASES]
    + [(c, "cuda") for c in CASES]
    + [(c, "cuda-emulated") for c in EMULATED_CASES],
)
def test_words_equal_faster_whisper(whisper_models, recordings, case, device):
    golden = json.loads((GOLDEN / f"{case}.json").read_text())
    key = golden["model"] if device == "cpu" else f"{golden['model']}@{device}"
    segments, _ = whisper_models[key].transcribe(recordings[golden["audio"]], **golden["options"])
    segments = list(segments)
    assert [s.tokens for s in segments] == [g["tokens"] for g in golden["segments"]]
    for ours, ref in zip(segments, golden["segments"]):
        assert (ours.start, ours.end) == (ref["start"], ref["end"])
        assert [w.word for w in ours.words] == [w["word"] for w in ref["words"]]
        for w, r in zip(ours.words, ref["words"]):
            assert (w.start, w.end) == (r["start"], r["end"])
            assert w.probability == pytest.approx(r["probability"], abs=1e-3)


def test_dtw_on_a_clear_diagonal():
    m = np.full((3, 6), -1.0, dtype=np.float32)
    for i, j in [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (2, 5)]:
        m[i, j] = 1.0
    text, time = negative_dtw(m)
    assert list(zip(text, time)) == [(0, 0), (0, 1), (1, 2), (1, 3), (2, 4), (2, 5)]


def test_without_word_timestamps_there_are_no_words(whisper_models, recordings):
    segments, _ = whisper_models["tiny.en"].transcribe(recordings["jfk"], beam_size=1)
    assert all(s.words is None for s in segments)
