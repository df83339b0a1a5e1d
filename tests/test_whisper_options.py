"""faster-whisper's remaining options on real weights, token for token.

tests/data/golden_options/*.json hold what faster-whisper 1.2.1 produced with
each option on the same weights and audio (bench/make_whisper_golden.py):
prefix, hotwords (alone, and with a prefix, which silences them in the first
window), clip_timestamps and multilingual in the sequential mode,
language_detection_segments/threshold (a vote over two windows from the
first clip's start), vad_parameters, and the batched mode's multilingual with
hotwords. Multilingual cases hold the language faster-whisper decoded each
segment in ("language"), taken from its tokenizer as each window was decoded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import saywho
from saywho.whisper import BatchedInferencePipeline
from saywho.whisper.clips import clip_seconds, seek_clips

from .weights import test_model_dir

GOLDEN = Path(__file__).parent / "data" / "golden_options"
CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def _golden(case: str) -> dict:
    return json.loads((GOLDEN / f"{case}.json").read_text())


def _assert_equal(segments, info, golden) -> None:
    tol = 1e-3
    assert info.language == golden["language"]
    assert info.language_probability == pytest.approx(golden["language_probability"], abs=tol)
    assert info.duration_after_vad == pytest.approx(golden["duration_after_vad"], abs=0.01)
    if "all_language_probs" in golden:
        top = info.all_language_probs[: len(golden["all_language_probs"])]
        assert [code for code, _ in top] == [code for code, _ in golden["all_language_probs"]]
        assert [p for _, p in top] == pytest.approx(
            [p for _, p in golden["all_language_probs"]], abs=tol
        )
    assert [s.tokens for s in segments] == [g["tokens"] for g in golden["segments"]]
    for ours, ref in zip(segments, golden["segments"]):
        assert ours.text == ref["text"]
        assert (ours.start, ours.end) == (ref["start"], ref["end"])
        assert ours.temperature == ref["temperature"]
        assert ours.avg_logprob == pytest.approx(ref["avg_logprob"], abs=tol)
        assert ours.no_speech_prob == pytest.approx(ref["no_speech_prob"], abs=tol)
        assert ours.language == ref.get("language", ours.language)


# the GPU runs every case too, as tests/test_transcribe.py's goldens
@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("case", CASES)
def test_options_equal_faster_whisper(whisper_models, recordings, case, device):
    golden = _golden(case)
    options = dict(golden["options"])
    model = whisper_models[golden["model"] + ("" if device == "cpu" else f"@{device}")]
    if options.pop("batched", False):
        segments, info = BatchedInferencePipeline(model).transcribe(
            recordings[golden["audio"]], **options
        )
    else:
        segments, info = model.transcribe(recordings[golden["audio"]], **options)
    segments = list(segments)
    _assert_equal(segments, info, golden)
    if options.get("multilingual"):
        # told French, each window is English and says so (faster-whisper's
        # batched segments carry no language: the tokens above show which
        # language token each chunk was decoded with)
        assert info.language == "fr"
        assert {s.language for s in segments} == {"en"}
    else:
        assert all(s.language is None for s in segments)


def test_every_form_of_clip_timestamps_walks_the_same_clips():
    frames = 4240
    expected = [(50, 3300), (3500, frames)]
    for form in ("0.5,33,35", [0.5, 33, 35], [{"start": 0.5, "end": 33}, 35]):
        assert seek_clips(clip_seconds(form), frames) == expected
    assert seek_clips(clip_seconds(None), frames) == [(0, frames)]
    assert seek_clips(clip_seconds("1,2"), frames) == [(100, 200)]


@pytest.mark.parametrize("bad", ["a,b", [-1.0], [{"start": 1}], [None]])
def test_bad_clip_timestamps_are_option_errors(whisper_models, recordings, bad):
    with pytest.raises(saywho.OptionError, match="clip_timestamps"):
        whisper_models["tiny.en"].transcribe(recordings["jfk"], clip_timestamps=bad)


def test_prompt_puts_hotwords_before_the_previous_text_unless_there_is_a_prefix(
    whisper_models,
):
    model = whisper_models["base"]
    t = model.tokenizer
    start = t.sot_sequence("en", "transcribe")
    hints, previous = t.encode(" Kennedy"), t.encode(" my fellow")
    prompt = model.prompt_tokens(previous, "en", "transcribe", False, None, "Kennedy")
    assert prompt == [t.sot_prev, *hints, *previous, *start]
    prompt = model.prompt_tokens([], "en", "transcribe", False, None, "  Kennedy ")
    assert prompt == [t.sot_prev, *hints, *start]
    prefixed = model.prompt_tokens([], "en", "transcribe", False, "And so", "Kennedy")
    assert prefixed == [*start, t.timestamp_begin, *t.encode(" And so")]
    long_hints = model.prompt_tokens([], "en", "transcribe", True, None, "word " * 400)
    assert long_hints.index(t.sot) == 1 + 223  # at most half the context, as the prefix


def test_multilingual_on_an_english_only_model_is_off(whisper_models, recordings):
    """As faster-whisper, which warns and turns it off."""
    segments, info = whisper_models["tiny.en"].transcribe(
        recordings["jfk"], beam_size=1, multilingual=True
    )
    segments = list(segments)
    assert info.language == "en" and segments
    assert all(s.language is None for s in segments)


def test_each_segments_language_reaches_the_result_and_its_json(recordings, tmp_path):
    golden = _golden("short_base_multilingual")
    with saywho.Pipeline(model=test_model_dir("base"), device="cpu", diarization=False) as p:
        result = p.process(recordings["jfk"], diarize=False, **golden["options"])
    assert result.language == "fr"  # what it was told; each segment says what it is
    assert result.segments and {s.language for s in result.segments} == {"en"}
    (path,) = result.write(tmp_path, formats="json")
    record = json.loads(path.read_text())
    assert [s["language"] for s in record["segments"]] == ["en"] * len(result.segments)
    again = saywho.Result.from_json(path)
    assert [s.language for s in again.segments] == [s.language for s in result.segments]


def test_one_language_transcripts_keep_their_json_shape(whisper_models, recordings, tmp_path):
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu", diarization=False) as p:
        result = p.process(recordings["jfk"], diarize=False, beam_size=1)
    (path,) = result.write(tmp_path, formats="json")
    assert all("language" not in s for s in json.loads(path.read_text())["segments"])


@pytest.mark.parametrize("names", ["saywho", "faster-whisper"])
def test_process_passes_vad_parameters_by_either_name(recordings, names):
    golden = _golden("short_tiny.en_vad_parameters")
    options = dict(golden["options"])
    if names == "saywho":
        options.pop("vad_filter")
        options.update(vad=True, vad_options=options.pop("vad_parameters"))
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu", diarization=False) as p:
        result = p.process(recordings[golden["audio"]], diarize=False, **options)
    got = [(s.text, s.start, s.end) for s in result.segments]
    assert got == [(g["text"], g["start"], g["end"]) for g in golden["segments"]]
    recorded = result.options["vad_parameters"]
    assert result.options["vad"] is True
    assert {k: recorded[k] for k in golden["options"]["vad_parameters"]} == (
        golden["options"]["vad_parameters"]
    )


def test_unknown_vad_parameters_are_option_errors(whisper_models, recordings):
    with pytest.raises(saywho.OptionError, match="min_silence_ms"):
        whisper_models["tiny.en"].transcribe(
            recordings["jfk"], vad_filter=True, vad_parameters={"min_silence_ms": 300}
        )
    with saywho.Pipeline(model=test_model_dir("tiny.en"), device="cpu", diarization=False) as p:
        with pytest.raises(saywho.OptionError, match="min_silence_ms"):
            p.process(recordings["jfk"], diarize=False, vad=True, vad_options={"min_silence_ms": 3})


def test_speaker_pieces_keep_their_segments_language():
    """Alignment splits segments at speaker changes; each piece keeps the
    language its segment was decoded in."""
    from saywho.api.speaker_words import split_segments_by_speaker
    from saywho.whisper.segments import Segment, Word

    def segment(start, words, language):
        words = [Word(start + i, start + i + 0.5, w, 0.9) for i, w in enumerate(words)]
        text = "".join(w.word for w in words)
        return Segment(0, 0, start, words[-1].end, text, [], -0.1, 1.0, 0.0, 0.0, words, language)

    segments = [segment(0.0, [" Bonjour", " à", " tous."], "fr"), segment(5.0, [" Hi."], "en")]
    out = split_segments_by_speaker(segments, ["A", "B", "B", "B"])
    assert [(s.text, s.speaker, s.language) for s in out] == [
        (" Bonjour", "A", "fr"),
        (" à tous.", "B", "fr"),
        (" Hi.", "B", "en"),
    ]
