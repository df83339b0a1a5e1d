"""The batched mode (faster-whisper's BatchedInferencePipeline) on real weights.

tests/data/golden_batched/*.json hold what faster-whisper's batched pipeline
produced on the same weights and audio (bench/make_whisper_golden.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho.eval.wer import normalize_words
from saywho.whisper import BatchedInferencePipeline
from saywho.whisper.batched import pack_chunks
from saywho.whisper.generate import GenerateOptions, generate_windows

GOLDEN = Path(__file__).parent / "data" / "golden_batched"


@pytest.mark.parametrize("case", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_segments_equal_faster_whispers_batched_pipeline(whisper_models, recordings, case):
    golden = json.loads((GOLDEN / f"{case}.json").read_text())
    pipeline = BatchedInferencePipeline(whisper_models[golden["model"]])
    segments, info = pipeline.transcribe(recordings[golden["audio"]], **golden["options"])
    segments = list(segments)
    assert info.language == golden["language"]
    assert info.duration_after_vad == pytest.approx(golden["duration_after_vad"], abs=1e-6)
    assert [s.tokens for s in segments] == [g["tokens"] for g in golden["segments"]]
    for ours, ref in zip(segments, golden["segments"]):
        assert ours.text == ref["text"]
        assert (ours.start, ours.end) == (ref["start"], ref["end"])
        assert ours.avg_logprob == pytest.approx(ref["avg_logprob"], abs=1e-3)
        assert ours.no_speech_prob == pytest.approx(ref["no_speech_prob"], abs=1e-3)
        if "words" in ref:
            got = [(w.word, w.start, w.end) for w in ours.words]
            assert got == [(w["word"], w["start"], w["end"]) for w in ref["words"]]
            probs = [w.probability for w in ours.words]
            assert probs == pytest.approx([w["probability"] for w in ref["words"]], abs=1e-3)


@pytest.mark.parametrize("model", ["tiny.en", "base"])
def test_jfk_text_equals_the_sequential_modes(whisper_models, recordings, model):
    """Batched decodes without timestamp tokens and sequential with them, so
    punctuation may fall differently; the words are the same."""
    sequential, _ = whisper_models[model].transcribe(recordings["jfk"])
    batched, _ = whisper_models[model].transcribe(recordings["jfk"], batch_size=8, vad_filter=True)
    words = normalize_words("".join(s.text for s in sequential))
    assert words == normalize_words("".join(s.text for s in batched))
    assert "ask not what your country can do for you" in " ".join(words)


def test_a_window_decodes_the_same_alone_or_in_a_batch(whisper_models, recordings):
    """Batches of 1 and of 8 give the same tokens and times, and scores equal
    to float32 rounding. saywho's own kernels sum every row in the same order
    whatever the batch; OpenBLAS's products (the encoder's) need not: its AVX2
    kernels on an AMD EPYC treat the rows of a partial tile differently, so a
    window's scores moved by 1e-7 there between a batch of 1 and one of 8
    (bit-identical on an AVX-512 Intel host)."""
    model = whisper_models["tiny.en"]
    runs = {}
    for batch_size in (1, 8):
        segments, _ = model.transcribe(
            recordings["long2"], batch_size=batch_size, vad_filter=True, beam_size=5
        )
        runs[batch_size] = list(segments)
    assert len(runs[1]) >= 5  # timestamp tokens on: several segments per chunk
    assert [(s.tokens, s.start, s.end) for s in runs[1]] == [
        (s.tokens, s.start, s.end) for s in runs[8]
    ]
    for alone, batched in zip(runs[1], runs[8]):
        assert alone.avg_logprob == pytest.approx(batched.avg_logprob, abs=1e-5)


def test_word_timing_reads_a_window_of_the_batchs_encoding(whisper_models, recordings):
    """The batched mode's word timestamps read window i of the batch's encoder
    output in place (a view in the core, no copy, no second encoding): the
    cross-attention equals that of the window encoded alone, to the float32
    rounding of the encoder's products (see the test above)."""
    model = whisper_models["tiny.en"]
    mel = _core.log_mel_spectrogram(recordings["jfk"], padding=160)[:, :-1]
    jfk = np.pad(mel, [(0, 0), (0, 3000 - mel.shape[1])])
    other = np.full_like(jfk, -1.5)  # a silent window beside it
    segments, _ = model.transcribe(recordings["jfk"], beam_size=1, without_timestamps=True)
    text = [t for s in segments for t in s.tokens if t < model.tokenizer.eot]
    start = model.tokenizer.sot_sequence(None, "transcribe")
    heads = np.asarray(model.alignment_heads, dtype=np.intc).reshape(-1, 2)
    special = dict(eot=model.special.eot, no_timestamps=model.special.no_timestamps)
    alone = _core.whisper_word_attention(
        model.core, model.encode(jfk), start, text, heads, **special
    )
    batch = model.encode(np.stack([other, jfk, other]))
    for item, want in ((1, alone), (0, None)):
        got = _core.whisper_word_attention(
            model.core, batch, start, text, heads, item=item, **special
        )
        if want is not None:
            np.testing.assert_allclose(got[0], want[0], atol=1e-4)
            np.testing.assert_allclose(got[1], want[1], atol=1e-4)
        else:  # the silent window attends elsewhere: the view is not always item 1
            assert np.abs(got[0] - alone[0]).max() > 1e-2
    for bad in (-1, 3):
        with pytest.raises(saywho.OptionError, match="item"):
            _core.whisper_word_attention(model.core, batch, start, text, heads, item=bad, **special)


def test_a_batch_narrows_as_windows_finish_and_gives_its_encoding_back(whisper_models, recordings):
    """A window that finishes leaves the batch (the core moves the windows
    still decoding to the front of the encoding, as CT2 drops finished batch
    entries) and the encoding is put back when generation ends. Silent
    windows end at once around jfk, so jfk moves from item 1 to item 0 and
    back: its tokens and scores are those it gets alone, and word alignment
    after the batch reads jfk at item 1 again."""
    model = whisper_models["tiny.en"]
    mel = _core.log_mel_spectrogram(recordings["jfk"], padding=160)[:, :-1]
    jfk = np.pad(mel, [(0, 0), (0, 3000 - mel.shape[1])])
    silent = np.full_like(jfk, -1.5)
    start = model.tokenizer.sot_sequence(None, "transcribe")
    prompt = start + [model.special.no_timestamps]
    options = GenerateOptions(beam_size=5, return_scores=True)

    def decode(features):
        encoded = model.encode(features)
        found = generate_windows(
            model,
            encoded,
            [prompt] * features.shape[0],
            model.special,
            options,
            suppress_ids=model.config.get("suppress_ids", ()),
            suppress_ids_begin=model.config.get("suppress_ids_begin", ()),
        )
        return found, encoded

    (alone,), alone_encoded = decode(jfk[None])
    found, batch = decode(np.stack([silent, jfk, silent]))
    assert len(found[0].sequences_ids[0]) < len(alone.sequences_ids[0]) // 2  # it did finish first
    assert found[1].sequences_ids == alone.sequences_ids
    assert found[1].scores == pytest.approx(alone.scores, abs=1e-5)
    text = [t for t in alone.sequences_ids[0] if t < model.tokenizer.eot]
    heads = np.asarray(model.alignment_heads, dtype=np.intc).reshape(-1, 2)
    special = dict(eot=model.special.eot, no_timestamps=model.special.no_timestamps)
    want = _core.whisper_word_attention(model.core, alone_encoded, start, text, heads, **special)
    got = _core.whisper_word_attention(model.core, batch, start, text, heads, item=1, **special)
    np.testing.assert_allclose(got[0], want[0], atol=1e-4)
    np.testing.assert_allclose(got[1], want[1], atol=1e-4)


def test_chunks_pack_speech_up_to_30_seconds_in_order():
    sr = 16000
    regions = [(0, 10 * sr), (12 * sr, 25 * sr), (30 * sr, 40 * sr), (41 * sr, 80 * sr)]
    chunks = pack_chunks(regions)
    assert [c.regions for c in chunks] == [regions[:2], regions[2:3], regions[3:]]
    assert [c.offset for c in chunks] == [0.0, 23.0, 33.0]
    assert [c.duration for c in chunks] == [23.0, 10.0, 39.0]  # a long region stands alone
    assert pack_chunks([]) == []


def test_silence_is_an_empty_result(whisper_models):
    segments, info = whisper_models["tiny.en"].transcribe(
        np.zeros(16000 * 40, np.float32), batch_size=4, vad_filter=True
    )
    assert list(segments) == [] and info.duration_after_vad == 0


def test_clip_timestamps_are_decoded_as_given(whisper_models, recordings):
    audio = recordings["long2"]
    segments, info = whisper_models["tiny.en"].transcribe(
        audio, batch_size=2, clip_timestamps=[{"start": 30.7, "end": 41.3}]
    )
    segments = list(segments)
    assert info.duration_after_vad == pytest.approx(10.6)
    assert segments[0].start == 30.7
    assert "ask not what your country" in "".join(s.text for s in segments).lower()


def test_multilingual_gives_each_chunk_its_language(whisper_models, recordings):
    segments, _ = whisper_models["base"].transcribe(
        recordings["jfk"], batch_size=2, vad_filter=True, multilingual=True
    )
    assert "ask not what your country" in "".join(s.text for s in segments).lower()


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_batch_sizes_are_option_errors(whisper_models, recordings, bad):
    with pytest.raises(saywho.OptionError, match="batch_size"):
        whisper_models["tiny.en"].transcribe(recordings["jfk"], batch_size=bad)


def test_long_audio_without_vad_or_clips_is_an_option_error(whisper_models, recordings):
    with pytest.raises(saywho.OptionError, match="vad_filter=True or clip_timestamps"):
        whisper_models["tiny.en"].transcribe(recordings["long2"], batch_size=4)


def test_memory_is_back_after_a_batch(recordings):
    from saywho.whisper.transcribe import WhisperModel

    from .weights import test_model_dir

    runtime = _core.Runtime(device="cpu")
    with WhisperModel(test_model_dir("tiny.en"), runtime) as model:
        weights = runtime.memory()["allocated"]
        list(model.transcribe(recordings["long2"], batch_size=8, vad_filter=True)[0])
        assert runtime.memory()["allocated"] == weights
    assert runtime.memory()["allocated"] == 0
    runtime.close()
