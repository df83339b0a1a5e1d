"""Silero VAD v6 on saywho's backend against onnxruntime and faster-whisper,
and transcribe(vad_filter=True) against faster-whisper's."""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.audio.vad import (
    WINDOW,
    ProbabilityStream,
    SileroVad,
    VadOptions,
    default_model_path,
    get_speech_timestamps,
    load_silero,
    speech_timestamps,
)

from .conftest import shared_file
from .weights import test_model_dir

OPTION_SETS = [
    {},
    {"min_silence_duration_ms": 100, "speech_pad_ms": 30},
    {"max_speech_duration_s": 5, "min_silence_duration_ms": 300},
    {"threshold": 0.7, "min_speech_duration_ms": 250},
]


@pytest.fixture(scope="module", params=["cpu", "cuda", "cuda-emulated"])
def vad(request, runtimes):
    """The model on each device: the GPU code gives the same timestamps."""
    with SileroVad(default_model_path(), runtimes[request.param]) as model:
        yield model


def test_bundled_model_is_fasterwhispers(data_dir):
    assert default_model_path().read_bytes() == (data_dir / "silero_vad_v6.onnx").read_bytes()


def test_probabilities_match_onnxruntime(vad, recordings):
    from faster_whisper.vad import get_vad_model  # onnxruntime on the same file

    for audio in (saywho.load_audio(shared_file("two_speakers.wav")), recordings["long2gap"]):
        padded = np.pad(audio, (0, 512 - len(audio) % 512))
        ours = vad.probabilities(padded)
        theirs = get_vad_model()(padded).ravel()
        assert ours.shape == theirs.shape
        assert np.abs(ours - theirs).max() <= 1e-4


@pytest.mark.parametrize("options", OPTION_SETS)
def test_speech_timestamps_are_fasterwhispers(vad, recordings, options):
    from faster_whisper.vad import VadOptions as TheirOptions
    from faster_whisper.vad import get_speech_timestamps as theirs

    audio = recordings["long2gap"]
    assert get_speech_timestamps(audio, VadOptions(**options), vad) == theirs(
        audio, TheirOptions(**options)
    )


# pieces that cut windows, a batch and the context of 64 samples anywhere:
# lengths of 1 sample, less than the context, one window and a bit, and more
# than the core's batch of windows (the last piece: whatever is left)
AWKWARD_PIECES = [1, 40, WINDOW + 3, 70_001, 333 * WINDOW - 5, 17]


def test_pieces_give_the_whole_recordings_probabilities(runtimes, recordings, monkeypatch):
    """Silero fed a recording in pieces (the LSTM's state and the context
    carried in the core; the core running its own batches) gives what one
    call over the whole recording gives, and the same speech timestamps. Not
    always its bits: a piece's LSTM input projection is a product of fewer
    rows, which the CPU may give to another kernel (docs/vad.md); the
    difference stays far inside the 1e-4 the goldens allow against
    onnxruntime."""
    import saywho.audio.vad

    # get_speech_timestamps' own pieces: 100,003 samples, not whole windows
    monkeypatch.setattr(saywho.audio.vad, "PIECE_SAMPLES", 100_003)
    audio = recordings["long2gap"]  # 4002 windows: one batch of the default 4096
    padded = np.pad(audio, (0, WINDOW - len(audio) % WINDOW))
    for device in ("cpu", "cuda-emulated"):
        with SileroVad(default_model_path(), runtimes[device]) as whole_model:
            whole = whole_model.probabilities(padded)
        assert whole.shape == (len(padded) // WINDOW,) and 0.9 < whole.max() <= 1.0
        # the core's batches of 333 windows (12 of them, the last shorter)
        with SileroVad(default_model_path(), runtimes[device], batch_size=333) as vad:
            batched = vad.probabilities(padded)
            assert np.abs(batched - whole).max() <= 1e-6, device
            stream, at = ProbabilityStream(vad), 0
            for size in AWKWARD_PIECES + [len(audio)]:
                stream.feed(audio[at : at + size])
                at += size
            assert stream.n_samples == len(audio)
            assert np.abs(stream.finish() - whole).max() <= 1e-6, device
            # a fresh run after the stream: no state leaks into it
            assert np.array_equal(vad.probabilities(padded), batched), device
            found = get_speech_timestamps(audio, None, vad)
            assert len(found) > 1 and found == speech_timestamps(whole, len(audio))


def test_going_on_from_another_state_is_refused(runtimes, recordings):
    """The core carries one recording's LSTM state and context from call to
    call. Going on from any other state is refused, not computed: a new
    model's (never set), another recording's (two streams on one model), or
    one a stream's error left half-fed (a piece the core took, the stream
    did not); a new stream from the start still gives the whole recording's
    probabilities."""
    audio = recordings["long2gap"]
    padded = np.pad(audio, (0, WINDOW - len(audio) % WINDOW))
    half = len(audio) // 2
    for device in ("cpu", "cuda-emulated"):
        with SileroVad(default_model_path(), runtimes[device], batch_size=333) as vad:
            with pytest.raises(saywho.OptionError, match="nothing to resume"):
                vad.probabilities(padded[: 20 * WINDOW], resume=True)
            whole = vad.probabilities(padded)
            first, second = ProbabilityStream(vad), ProbabilityStream(vad)
            first.feed(audio[:half])
            second.feed(audio[:1000])
            with pytest.raises(saywho.OptionError, match="another recording ran"):
                first.feed(audio[half:])
            with pytest.raises(saywho.OptionError, match="another recording ran"):
                vad.probabilities(padded[: 20 * WINDOW], resume=True)  # a stream ran since
            # bad samples in the middle of a piece: the window the last piece
            # began is run, then the piece's own windows cannot be read
            broken = ProbabilityStream(vad)
            broken.feed(audio[:1000])  # one window run, 488 samples kept
            piece = audio[1000:3000].astype(object)
            piece[600] = "not a sample"
            with pytest.raises(ValueError):
                broken.feed(piece)
            with pytest.raises(saywho.OptionError, match="stopped part-way.*ValueError"):
                broken.feed(audio[1000:3000])
            with pytest.raises(saywho.OptionError, match="stopped part-way"):
                broken.finish()
            again = ProbabilityStream(vad)
            for at in range(0, len(audio), half):
                again.feed(audio[at : at + half])
            assert np.abs(again.finish() - whole).max() <= 1e-6, device


def test_silence_has_no_speech(vad):
    assert get_speech_timestamps(np.zeros(16000 * 5, np.float32), None, vad) == []


def test_transcription_with_vad_filter_matches_fasterwhisper(whisper_models, recordings):
    from faster_whisper import WhisperModel as TheirModel

    audio = recordings["long2gap"]
    ours, info = whisper_models["tiny.en"].transcribe(audio, beam_size=1, vad_filter=True)
    ours = list(ours)
    theirs, their_info = TheirModel(str(test_model_dir("tiny.en")), device="cpu").transcribe(
        audio, beam_size=1, vad_filter=True
    )
    theirs = list(theirs)
    assert info.duration_after_vad == pytest.approx(their_info.duration_after_vad, abs=0.01)
    assert [s.text for s in ours] == [s.text for s in theirs]
    # moved back to the recording's clock the way faster-whisper moves them
    assert [(s.start, s.end) for s in ours] == [(s.start, s.end) for s in theirs]


def test_no_speech_is_an_empty_result(whisper_models):
    silence = np.zeros(16000 * 8, np.float32)
    segments, info = whisper_models["tiny.en"].transcribe(silence, vad_filter=True)
    assert list(segments) == []
    assert info.duration == 8.0 and info.duration_after_vad == 0.0


def test_bad_options_and_weights():
    with pytest.raises(saywho.OptionError):
        VadOptions(threshold=1.5)
    with pytest.raises(saywho.OptionError):
        VadOptions(speech_pad_ms=-1)
    with pytest.raises(saywho.ModelError, match="Silero"):
        load_silero(
            test_model_dir("tiny.en").parent / "pyannote-segmentation-3.0" / "segmentation-3.0.onnx"
        )


def test_close_returns_every_byte():
    """The core model holds the weights once; close() and `with` give them back."""
    from saywho import _core

    runtime = _core.Runtime(device="cpu", threads=2)
    try:
        vad = SileroVad(default_model_path(), runtime)
        held = runtime.memory()["allocated"]
        assert held >= 4 * 300_000  # ~310 k parameters, float32, on the backend
        assert vad.probabilities(np.zeros(512 * 10, np.float32)).shape == (10,)
        assert runtime.memory()["allocated"] == held  # a run leaves nothing behind
        vad.close()
        vad.close()  # idempotent
        assert runtime.memory()["allocated"] == 0
        with pytest.raises(saywho.ModelError, match="closed"):
            vad.probabilities(np.zeros(512, np.float32))
        bad = load_silero(default_model_path())
        bad["encoder.conv_layers.2.bias"] = bad["encoder.conv_layers.2.bias"][:10]
        with pytest.raises(saywho.ModelError, match=r"'encoder\.conv_layers\.2\.bias' has shape"):
            _core.SileroModel(runtime, bad)
        assert runtime.memory()["allocated"] == 0
        with SileroVad(default_model_path(), runtime) as again:
            with pytest.raises(saywho.OptionError):
                again.probabilities(np.zeros(500, np.float32))
        assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()
