"""Whisper's log-mel and the Kaldi fbank against references.

References: Whisper's own filterbank (mel_filters.npz), a NumPy transcription
of Whisper's log_mel_spectrogram in float64, faster-whisper's NumPy feature
extractor (a peer), a NumPy transcription of torchaudio's kaldi.fbank, and
kaldi-native-fbank (an independent C++ implementation of Kaldi's fbank).
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho import _core

from .conftest import shared_file

N_SAMPLES = 480000


@pytest.fixture(scope="module")
def jfk() -> np.ndarray:
    return saywho.load_audio(shared_file("jfk.wav"))


@pytest.fixture(scope="module")
def whisper_filters() -> dict[int, np.ndarray]:
    npz = np.load(shared_file("whisper_assets/mel_filters.npz"))
    return {80: npz["mel_80"], 128: npz["mel_128"]}


def whisper_log_mel_reference(audio, filters, padding=0):
    """Whisper's log_mel_spectrogram, step by step, in float64."""
    x = np.pad(audio.astype(np.float64), (0, padding))
    xp = np.pad(x, (200, 200), mode="reflect")  # torch.stft(center=True)
    n_frames = 1 + len(x) // 160
    idx = np.arange(400)[None, :] + 160 * np.arange(n_frames)[:, None]
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # periodic Hann
    power = np.abs(np.fft.rfft(xp[idx] * window, axis=1)) ** 2
    power = power[:-1]  # Whisper drops the last frame
    mel = filters.astype(np.float64) @ power.T
    log = np.log10(np.maximum(mel, 1e-10))
    log = np.maximum(log, log.max() - 8.0)
    return (log + 4.0) / 4.0


@pytest.mark.parametrize("n_mels", [80, 128])
def test_mel_filters_equal_whisper_assets(whisper_filters, n_mels):
    ours = _core.mel_filters(n_mels)
    truth = whisper_filters[n_mels]
    assert ours.shape == truth.shape
    assert np.max(np.abs(ours - truth)) < 1e-8


@pytest.mark.parametrize("n_mels", [80, 128])
@pytest.mark.parametrize("padding", [0, N_SAMPLES])
def test_log_mel_matches_whisper_reference(jfk, whisper_filters, n_mels, padding):
    ours = saywho.log_mel_spectrogram(jfk, n_mels=n_mels, padding=padding)
    ref = whisper_log_mel_reference(jfk, whisper_filters[n_mels], padding)
    assert ours.dtype == np.float32
    assert ours.shape == ref.shape == (n_mels, (jfk.size + padding) // 160)
    err = np.max(np.abs(ours - ref))
    print(f"log-mel {n_mels} bins, padding {padding}: max abs error {err:.2e}")
    assert err < 1e-4


def test_log_mel_close_to_faster_whisper(jfk):
    from faster_whisper.feature_extractor import FeatureExtractor

    peer = FeatureExtractor(feature_size=80)(jfk, padding=N_SAMPLES)
    ours = saywho.log_mel_spectrogram(jfk, n_mels=80, padding=N_SAMPLES)
    assert peer.shape == ours.shape
    # the peer computes in float32 (complex64 STFT, its own filterbank)
    err = np.max(np.abs(ours - peer))
    print(f"log-mel vs faster-whisper: max abs difference {err:.2e}")
    assert err < 2e-3


def test_log_mel_accepts_a_path(jfk_wav, jfk):
    assert np.array_equal(saywho.log_mel_spectrogram(str(jfk_wav)), saywho.log_mel_spectrogram(jfk))


def test_pad_or_trim():
    x = np.ones(10, dtype=np.float32)
    assert saywho.pad_or_trim(x, 16).tolist() == [1.0] * 10 + [0.0] * 6
    assert saywho.pad_or_trim(x, 4).shape == (4,)


@pytest.mark.parametrize(
    "kwargs",
    [{"n_mels": 64}, {"padding": -1}],
)
def test_log_mel_rejects_bad_options(jfk, kwargs):
    with pytest.raises(saywho.OptionError):
        saywho.log_mel_spectrogram(jfk, **kwargs)


def test_log_mel_rejects_nonfinite():
    x = np.zeros(16000, dtype=np.float32)
    x[5] = np.nan
    with pytest.raises(saywho.OptionError, match="not finite"):
        saywho.log_mel_spectrogram(x)


def kaldi_fbank_reference(audio, num_bins=80, scale=32768.0, subtract_mean=True):
    """torchaudio.compliance.kaldi.fbank with WeSpeaker's settings, in float64."""
    x = audio.astype(np.float64) * scale
    win, shift, n_fft = 400, 160, 512
    n_frames = 1 + (len(x) - win) // shift
    frames = x[np.arange(win)[None, :] + shift * np.arange(n_frames)[:, None]]
    frames = frames - frames.mean(axis=1, keepdims=True)
    prev = np.concatenate([frames[:, :1], frames[:, :-1]], axis=1)
    frames = frames - 0.97 * prev
    frames = frames * (0.54 - 0.46 * np.cos(2 * np.pi * np.arange(win) / (win - 1)))
    power = np.abs(np.fft.rfft(frames, n=n_fft, axis=1)) ** 2

    def mel(f):
        return 1127.0 * np.log(1.0 + f / 700.0)

    lo, hi = mel(20.0), mel(8000.0)
    delta = (hi - lo) / (num_bins + 1)
    left = lo + np.arange(num_bins)[:, None] * delta
    centre, right = left + delta, left + 2 * delta
    m = mel(16000.0 / n_fft * np.arange(n_fft // 2))[None, :]
    banks = np.maximum(
        0.0, np.minimum((m - left) / (centre - left), (right - m) / (right - centre))
    )
    banks = np.pad(banks, ((0, 0), (0, 1)))
    feats = np.log(np.maximum(power @ banks.T, np.finfo(np.float32).eps))
    if subtract_mean:
        feats = feats - feats.mean(axis=0, keepdims=True)
    return feats


@pytest.mark.parametrize("subtract_mean", [False, True])
def test_fbank_matches_numpy_reference(jfk, subtract_mean):
    ours = saywho.fbank(jfk, subtract_mean=subtract_mean)
    ref = kaldi_fbank_reference(jfk, subtract_mean=subtract_mean)
    assert ours.shape == ref.shape == (1 + (jfk.size - 400) // 160, 80)
    err = np.max(np.abs(ours - ref))
    print(f"fbank (subtract_mean={subtract_mean}): max abs error {err:.2e}")
    assert err < 1e-4


def test_fbank_matches_kaldi_native_fbank(jfk):
    import kaldi_native_fbank as knf

    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0.0
    opts.frame_opts.samp_freq = 16000
    opts.frame_opts.window_type = "hamming"
    opts.frame_opts.snip_edges = True
    opts.mel_opts.num_bins = 80
    fb = knf.OnlineFbank(opts)
    fb.accept_waveform(16000, (jfk * 32768.0).tolist())
    fb.input_finished()
    peer = np.array([fb.get_frame(i) for i in range(fb.num_frames_ready)])
    ours = saywho.fbank(jfk, subtract_mean=False)
    assert peer.shape == ours.shape
    # the peer is float32 throughout; quiet bins differ most in the log
    err = np.max(np.abs(ours - peer))
    print(f"fbank vs kaldi-native-fbank: max abs difference {err:.2e}")
    assert err < 5e-3


def test_povey_window_matches_kaldi_native_fbank(jfk):
    """CAM++'s front end: Kaldi's default "povey" window (Hann ** 0.85)."""
    import kaldi_native_fbank as knf

    opts = knf.FbankOptions()
    opts.frame_opts.dither = 0.0
    opts.frame_opts.samp_freq = 16000
    opts.frame_opts.window_type = "povey"
    opts.frame_opts.snip_edges = True
    opts.mel_opts.num_bins = 80
    fb = knf.OnlineFbank(opts)
    fb.accept_waveform(16000, (jfk * 32768.0).tolist())
    fb.input_finished()
    peer = np.array([fb.get_frame(i) for i in range(fb.num_frames_ready)])
    ours = saywho.fbank(jfk, subtract_mean=False, povey_window=True)
    assert peer.shape == ours.shape
    err = np.max(np.abs(ours - peer))
    print(f"fbank (povey) vs kaldi-native-fbank: max abs difference {err:.2e}")
    assert err < 5e-3
    hamming = saywho.fbank(jfk, subtract_mean=False)
    assert np.max(np.abs(hamming - peer)) > 10 * err  # the option is not a no-op


def test_fbank_rejects_short_and_bad_options(jfk):
    with pytest.raises(saywho.OptionError):
        saywho.fbank(jfk[:399])
    with pytest.raises(saywho.OptionError):
        saywho.fbank(jfk, num_mel_bins=0)
    with pytest.raises(saywho.OptionError):
        saywho.fbank(jfk, high_freq=9000.0)


def test_feature_threads_change_nothing_but_the_pool(jfk):
    """Pipeline(threads=) reaches the features: any thread count gives the same
    frames (each frame is computed by one thread), and a bad one is an OptionError."""
    long = np.tile(jfk, 2)  # past the 10 s below which no pool is made
    one = _core.log_mel_spectrogram(long, threads=1)
    for threads in (0, 2, 3):
        assert np.array_equal(_core.log_mel_spectrogram(long, threads=threads), one)
    assert np.array_equal(_core.fbank(long, threads=2), _core.fbank(long, threads=1))
    assert np.array_equal(
        _core.mel_power_spectrogram(long, threads=2), _core.mel_power_spectrogram(long, threads=1)
    )
    for call in (_core.log_mel_spectrogram, _core.fbank, _core.mel_power_spectrogram):
        with pytest.raises(saywho.OptionError, match="threads"):
            call(long, threads=-1)
