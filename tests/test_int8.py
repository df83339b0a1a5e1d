"""compute_type "int8": Whisper's linear layers on int8 weights.

Token-identical cases against faster-whisper's int8 live in
tests/data/golden (test_transcribe.py runs them); here are the long-audio
comparison, the memory and the option names.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import saywho
from saywho import _core
from saywho.models.test_weights import test_model_dir
from saywho.wer import word_error_rate
from saywho.whisper.transcribe import WhisperModel

DATA = Path(__file__).parent / "data"


def _text(segments) -> str:
    return " ".join(s["text"] if isinstance(s, dict) else s.text for s in segments)


def test_long_audio_stays_close_to_faster_whispers_int8(whisper_models, recordings):
    """The engines round differently (CTranslate2 quantizes other layers too),
    so on 2 minutes their greedy texts part after 13 identical segments; the
    words must stay close, and no further from float32's than the peer's."""
    golden = json.loads(
        (DATA / "golden_approx" / "long2min_tiny.en_greedy_t0_int8.json").read_text()
    )
    f32 = json.loads((DATA / "golden" / "long2min_tiny.en_greedy_t0.json").read_text())
    segments, _ = whisper_models["tiny.en:int8"].transcribe(
        recordings["long2"], **golden["options"]
    )
    segments = list(segments)
    assert [s.tokens for s in segments[:13]] == [g["tokens"] for g in golden["segments"][:13]]
    ours, peer = _text(segments), _text(golden["segments"])
    assert word_error_rate(peer, ours) < 0.15
    reference = _text(f32["segments"])
    assert word_error_rate(reference, ours) <= word_error_rate(reference, peer) + 0.02


def test_int8_weights_take_less_memory_and_give_it_all_back():
    sizes = {}
    for compute in ("float32", "int8"):
        runtime = _core.Runtime(device="cpu")
        with WhisperModel(test_model_dir("base"), runtime, compute_type=compute) as model:
            sizes[compute] = runtime.memory()["allocated"]
            assert model.compute_type == compute
        assert runtime.memory()["allocated"] == 0
        runtime.close()
    # base: 72.6 M parameters; int8 keeps a float32 token embedding for the
    # lookups (51865 x 512) beside the int8 copy the output layer uses
    linear = sizes["float32"] - 51865 * 512 * 4
    assert sizes["int8"] < 51865 * 512 * 5 + linear / 2
    assert sizes["int8"] < 0.7 * sizes["float32"]


@pytest.mark.parametrize(
    "compute_type, resolved",
    [("default", "float32"), ("float32", "float32"), ("auto", "int8"), ("int8_float32", "int8")],
)
def test_compute_type_names_are_faster_whispers(compute_type, resolved):
    from saywho.whisper.transcribe import resolve_compute_type

    assert resolve_compute_type(compute_type) == resolved


@pytest.mark.parametrize("compute_type", ["float16", "int8_float16", "int4", ""])
def test_compute_types_not_built_are_option_errors(compute_type):
    runtime = _core.Runtime(device="cpu")
    with pytest.raises(saywho.OptionError, match="compute_type"):
        WhisperModel(test_model_dir("tiny.en"), runtime, compute_type=compute_type)
    assert runtime.memory()["allocated"] == 0
    runtime.close()
    with pytest.raises(saywho.OptionError, match="compute_type"):
        _core.WhisperModel(_core.Runtime(device="cpu"), {}, {}, compute_type="int4")
