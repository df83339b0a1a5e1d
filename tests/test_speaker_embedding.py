"""The GE2E speaker encoder (resemblyzer 0.1.4's real weights) in saywho.

The network is checked against a NumPy LSTM written here from the equations,
the mel power frames against an STFT written here, and the embeddings on
real speech: turns of one speaker are closer to each other than to the
other speaker's.
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho.diarization.embedding_ge2e import (
    PARTIAL,
    GE2EEncoder,
    load_ge2e,
    partial_starts,
    resample_mask,
)
from saywho.formats.rttm import read_rttm

from .conftest import GPU_DEVICES, shared_file
from .weights import test_diarization_models


@pytest.fixture(scope="module")
def weights():
    return load_ge2e(test_diarization_models()[1])


@pytest.fixture(scope="module")
def encoder(weights):
    with GE2EEncoder(weights) as enc:
        yield enc


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def reference_embedding(weights, mel: np.ndarray) -> np.ndarray:
    """resemblyzer's forward in float64: 3 LSTM layers, the last step's
    hidden state, linear, ReLU, L2 norm."""
    x = mel.astype(np.float64)
    for layer in range(3):
        w_ih = weights[f"lstm.weight_ih_l{layer}"].astype(np.float64)
        w_hh = weights[f"lstm.weight_hh_l{layer}"].astype(np.float64)
        b = (weights[f"lstm.bias_ih_l{layer}"] + weights[f"lstm.bias_hh_l{layer}"]).astype(
            np.float64
        )
        h, c, out = np.zeros(256), np.zeros(256), []
        for frame in x:
            i, f, g, o = np.split(w_ih @ frame + w_hh @ h + b, 4)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out.append(h)
        x = np.array(out)
    raw = np.maximum(weights["linear.weight"] @ x[-1] + weights["linear.bias"], 0.0)
    return raw / np.linalg.norm(raw)


def test_network_matches_the_equations(encoder, weights):
    audio = saywho.load_audio(shared_file("jfk.wav"))
    mel, _ = encoder.features(audio)
    batch = np.stack([mel[100 : 100 + PARTIAL], mel[400 : 400 + PARTIAL]])
    ours = encoder.embed_partials(batch)
    for k in range(2):
        np.testing.assert_allclose(ours[k], reference_embedding(weights, batch[k]), atol=2e-5)


def test_mel_power_matches_an_stft():
    audio = saywho.load_audio(shared_file("jfk.wav"))[:32000]
    ours = _core.mel_power_spectrogram(audio, n_mels=40)
    padded = np.pad(audio.astype(np.float64), 200, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, 400)[::160][: len(ours)]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
    expected = power @ _core.mel_filters(n_mels=40).T.astype(np.float64)
    assert ours.shape == (200, 40)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-6 * expected.max())


def test_one_speaker_is_closer_to_itself(encoder):
    audio = saywho.load_audio(shared_file("two_speakers.wav"))
    (turns,) = read_rttm(shared_file("two_speakers.rttm")).values()
    long_turns = [t for t in turns if t.duration >= 1.0]
    # the encoder takes a batch of equal-length waveforms; these differ, so one by one
    emb = np.concatenate(
        [encoder(audio[int(t.start * 16000) : int(t.end * 16000)]) for t in long_turns]
    )
    sim = emb @ emb.T
    who = np.array([t.speaker for t in long_turns])
    same = who[:, None] == who[None, :]
    off = ~np.eye(len(who), dtype=bool)
    assert sim[same & off].mean() > sim[~same].mean() + 0.05
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_masks_pick_frames_and_empty_masks_give_nan(encoder):
    audio = saywho.load_audio(shared_file("jfk.wav"))[: 16000 * 4]
    full = encoder(audio[None])
    masked = encoder(audio[None], np.ones((1, 589), np.float32))
    np.testing.assert_allclose(full, masked, atol=1e-6)
    nothing = encoder(audio[None], np.zeros((1, 589), np.float32))
    assert np.isnan(nothing).all()


def test_partials_cover_every_frame():
    assert partial_starts(50, 80) == [0]
    assert partial_starts(PARTIAL, 80) == [0]
    assert partial_starts(400, 80) == [0, 80, 160, 240]
    assert partial_starts(401, 160) == [0, 160, 241]


def test_nearest_resampling_as_torch_does():
    mask = np.array([0, 1, 1, 0], np.float32)
    assert resample_mask(mask, 8).tolist() == [0, 0, 1, 1, 1, 1, 0, 0]
    assert resample_mask(mask, 2).tolist() == [0, 1]


def test_wrong_checkpoint_is_a_model_error(tmp_path):
    seg, _ = test_diarization_models()
    with pytest.raises(saywho.ModelError):
        load_ge2e(seg)
    with pytest.raises(saywho.OptionError):
        GE2EEncoder(load_ge2e(test_diarization_models()[1]), partial_step=0)


def test_padded_rows_give_their_own_embedding(encoder, weights):
    """Rows of different lengths share one core call: each ends at its length."""
    audio = saywho.load_audio(shared_file("jfk.wav"))
    mel, _ = encoder.features(audio)
    batch = np.zeros((2, PARTIAL, 40), np.float32)
    batch[0] = mel[100 : 100 + PARTIAL]
    batch[1, :90] = mel[400:490]
    ours = encoder.embed_partials(batch, np.array([PARTIAL, 90]))
    np.testing.assert_allclose(ours[1], reference_embedding(weights, mel[400:490]), atol=2e-5)
    np.testing.assert_allclose(ours[0], reference_embedding(weights, batch[0]), atol=2e-5)


def test_close_returns_every_byte(weights):
    runtime = _core.Runtime(device="cpu", threads=2)
    try:
        model = GE2EEncoder(weights, runtime)
        held = runtime.memory()["allocated"]
        assert held >= 4 * 1_400_000  # the LSTM and linear weights, once, on the backend
        model(np.full((1, 16000), 0.01, np.float32))
        assert runtime.memory()["allocated"] == held
        model.close()
        model.close()  # idempotent
        assert runtime.memory()["allocated"] == 0
        with pytest.raises(saywho.ModelError, match="closed"):
            model.embed_partials(np.zeros((1, 10, 40), np.float32))
        bad = dict(weights)
        bad["lstm.weight_hh_l2"] = bad["lstm.weight_hh_l2"][:, :100]
        with pytest.raises(
            saywho.ModelError, match=r"'lstm\.weight_hh_l2' has shape \[1024, 100\], expected"
        ):
            _core.GE2EModel(runtime, bad)
        assert runtime.memory()["allocated"] == 0
        with _core.GE2EModel(runtime, weights) as core:
            with pytest.raises(saywho.OptionError):
                core.run(np.zeros((1, 10, 40), np.float32), np.array([11]))
            with pytest.raises(saywho.OptionError):
                core.run(np.zeros((1, 10, 80), np.float32))
        assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_cuda_backend_matches_the_cpu(weights, runtimes, device):
    """The forward, L2 normalisation included, on the CUDA backend's kernels
    (the CPU emulator in CI, a GPU where one answers)."""
    audio = saywho.load_audio(shared_file("jfk.wav"))
    with GE2EEncoder(weights, runtimes["cpu"]) as cpu:
        mel, _ = cpu.features(audio)
        batch = np.stack([mel[100:140], mel[400:440]])
        want = cpu.embed_partials(batch, np.array([40, 25]))
    with GE2EEncoder(weights, runtimes[device]) as on_device:
        got = on_device.embed_partials(batch, np.array([40, 25]))
    np.testing.assert_allclose(got, want, atol=1e-5)
