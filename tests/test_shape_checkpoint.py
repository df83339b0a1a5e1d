"""bench/make_shape_checkpoint.py: random-weight Whisper checkpoints of the
shapes users run, in both formats, read by saywho and faster-whisper, and
decoding the forced token count bench/bench_gpu.py relies on."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import saywho
from saywho.models.whisper_weights import load_whisper
from saywho.whisper.tokenizer import Tokenizer
from saywho.whisper.transcribe import WhisperModel

REPO = Path(__file__).resolve().parents[1]
JFK = REPO / "tests" / "data" / "shared" / "jfk.wav"


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


shape = _bench_module("make_shape_checkpoint")


@pytest.fixture(scope="module")
def test_shape(tmp_path_factory) -> Path:
    return shape.make_checkpoint("test-shape", tmp_path_factory.mktemp("shape"), seed=3)


def test_published_dims():
    # OpenAI's ModelDimensions for the sizes the GPU rows time
    v3 = shape.dims_of("large-v3-shape")
    assert (v3["n_mels"], v3["n_audio_state"], v3["n_audio_head"], v3["n_vocab"]) == (
        128,
        1280,
        20,
        51866,
    )
    assert (v3["n_audio_layer"], v3["n_text_layer"]) == (32, 32)
    assert shape.dims_of("large-v3-turbo")["n_text_layer"] == 4
    assert shape.dims_of("medium")["n_text_state"] == 1024
    assert shape.dims_of("small")["n_audio_layer"] == 12
    with pytest.raises(SystemExit, match="unknown shape"):
        shape.dims_of("huge-shape")


def test_both_formats_hold_the_same_values(test_shape):
    hf, ct2 = load_whisper(test_shape / "hf"), load_whisper(test_shape / "ct2")
    assert (hf.format, ct2.format) == ("safetensors", "ctranslate2")
    assert hf.dims == ct2.dims == shape.dims_of("test")
    for name, value in hf.tensors.items():
        assert value.dtype == np.float16, name
        np.testing.assert_array_equal(value, ct2.tensors[name], err_msg=name)
    # unit-scale products, no zeros standing in for weights, nothing infinite
    w = np.asarray(hf.tensors["decoder.blocks.0.mlp.0.weight"], np.float32)
    assert np.all(np.isfinite(w)) and np.all(w != 0)
    assert 0.3 < float(np.std(w) * np.sqrt(w.shape[1])) < 3
    ln = hf.tensors["encoder.blocks.1.attn_ln.weight"]
    assert np.all(ln == 1) and np.all(hf.tensors["encoder.blocks.1.attn_ln.bias"] == 0)
    # the key projections have no bias: the fused CT2 bias holds zeros there
    assert "decoder.blocks.0.attn.key.bias" not in hf.tensors
    again = shape.make_checkpoint("test-shape", test_shape, seed=3)  # complete: left alone
    assert again == test_shape


def test_seed_changes_the_values(tmp_path, test_shape):
    other = shape.make_checkpoint("test", tmp_path, seed=4, formats=["hf"])
    a = load_whisper(test_shape / "hf").tensors["encoder.conv2.weight"]
    b = load_whisper(other / "hf").tensors["encoder.conv2.weight"]
    assert a.shape == b.shape and not np.array_equal(a, b)


def test_large_v3_vocabulary(tmp_path):
    # 51866 tokens: <|yue|> at 50358, the later specials one up, as large-v3's own
    tokens = shape.write_tokenizer(tmp_path, 51866)
    tok = Tokenizer(tmp_path / "tokenizer.json", multilingual=True)
    assert tok.languages["yue"] == 50358 and tok.languages["en"] == 50259
    assert (tok.sot, tok.eot, tok.no_timestamps) == (50258, 50257, 50364)
    assert tok.timestamp_begin == 50365
    vocabulary = (tmp_path / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
    assert len(vocabulary) == 51866 and vocabulary[50358] == "<|yue|>"
    assert vocabulary[51865] == "<|30.00|>"
    assert len(tokens["lang_ids"]) == 100 and 50358 in tokens["lang_ids"]
    assert 50364 not in tokens["suppress_ids"]  # notimestamps stays allowed


def test_hf_config_names_the_shape(test_shape):
    config = json.loads((test_shape / "hf" / "config.json").read_text())
    generation = json.loads((test_shape / "hf" / "generation_config.json").read_text())
    dims = shape.dims_of("test")
    assert config["model_type"] == "whisper"
    assert config["d_model"] == dims["n_text_state"]
    assert config["num_mel_bins"] == dims["n_mels"]
    assert config["decoder_layers"] == dims["n_text_layer"]
    assert generation["lang_to_id"]["<|en|>"] == 50259
    assert generation["no_timestamps_token_id"] == 50363
    assert generation["task_to_id"]["transcribe"] == 50359
    # both engines take the mel count from here (faster-whisper assumes 80 without it)
    for fmt in ("hf", "ct2"):
        features = json.loads((test_shape / fmt / "preprocessor_config.json").read_text())
        assert features["feature_size"] == dims["n_mels"]


def _forced(model_eot: int, tokens: int) -> dict:
    bench = _bench_module("bench_gpu")
    return bench.forced(tokens, model_eot)


def test_saywho_and_faster_whisper_decode_the_forced_tokens(test_shape):
    from faster_whisper import WhisperModel as FasterWhisper

    audio = saywho.load_audio(JFK)
    audio = np.concatenate([audio] * 3)[: 16000 * 30]  # one whole window
    tokens = {}
    for fmt in ("hf", "ct2"):
        model = WhisperModel(str(test_shape / fmt), device="cpu", compute_type="float32")
        options = _forced(model.tokenizer.eot, 9)
        segments, _ = model.transcribe(audio, beam_size=2, **options)
        tokens[fmt] = [t for s in segments for t in s.tokens]
    assert len(tokens["hf"]) == 9  # exactly the forced count: the end of text was suppressed
    assert tokens["hf"] == tokens["ct2"]
    peer = FasterWhisper(str(test_shape / "ct2"), device="cpu", compute_type="float32")
    segments, _ = peer.transcribe(audio, beam_size=2, **options)
    assert len([t for s in segments for t in s.tokens]) == 9
