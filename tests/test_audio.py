"""Audio input: files of many containers and codecs (made here with the ffmpeg
CLI from tests/data/shared/jfk.wav), error messages that name the file, and
NumPy arrays."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import threading
import wave
from pathlib import Path

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho.audio.decode import SAMPLE_RATE, load_audio

JFK_SAMPLES = 176000  # 11 s at 16 kHz
TOLERANCE = 800  # 50 ms: codecs pad and trim a little

# name -> ffmpeg arguments between the inputs and the output file. "{wav}" is
# jfk.wav; "{video}" a lavfi colour source as long as the speech.
VIDEO = "-f lavfi -i color=c=blue:s=64x64:r=10:d=11"
FORMATS = {
    "jfk.flac": "-i {wav} -c:a flac",
    "jfk.mp3": "-i {wav} -c:a libmp3lame -b:a 64k",
    "jfk.m4a": "-i {wav} -c:a aac -b:a 64k",
    "jfk.ogg": "-i {wav} -c:a libvorbis -q:a 4",
    "jfk.opus": "-i {wav} -c:a libopus -b:a 32k",
    "jfk_video.mp4": VIDEO + " -i {wav} -map 0:v -map 1:a -c:v libx264 -pix_fmt yuv420p "
    "-preset ultrafast -c:a aac -b:a 64k",
    "jfk_video.mkv": VIDEO + " -i {wav} -map 0:v -map 1:a -c:v mpeg4 -c:a libvorbis",
    "jfk_vp8.webm": VIDEO + " -i {wav} -map 0:v -map 1:a -c:v libvpx -deadline realtime "
    "-c:a libopus",
    "jfk_vp9.webm": VIDEO + " -i {wav} -map 0:v -map 1:a -c:v libvpx-vp9 -deadline realtime "
    "-cpu-used 8 -c:a libopus",
    # Left: the speech; right: the speech at half level. Mean: 0.75 x speech.
    "jfk_44k_stereo.wav": "-i {wav} -af pan=stereo|c0=c0|c1=0.5*c0 -ar 44100 -c:a pcm_s16le",
    "video_only.mp4": VIDEO + " -c:v libx264 -pix_fmt yuv420p -preset ultrafast -an",
}
AUDIO_FILES = [name for name in FORMATS if name != "video_only.mp4"]


@pytest.fixture(scope="session")
def made(tmp_path_factory, jfk_wav) -> Path:
    """Every file of FORMATS, transcoded once per session."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("the ffmpeg CLI is needed to make the test files")
    out = tmp_path_factory.mktemp("audio_formats")
    for name, args in FORMATS.items():
        cmd = ["ffmpeg", "-nostdin", "-v", "error", "-y"]
        cmd += [a.replace("{wav}", str(jfk_wav)) for a in args.split()]
        cmd.append(str(out / name))
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="session")
def reference(jfk_wav) -> np.ndarray:
    return _core.decode_file(jfk_wav, SAMPLE_RATE)


def _aligned(a: np.ndarray, b: np.ndarray, max_lag: int = 4000):
    """b shifted to best match a (codec delays), both cut to the overlap."""
    n = 1 << int(math.ceil(math.log2(len(a) + len(b))))
    xc = np.fft.irfft(np.fft.rfft(a, n) * np.conj(np.fft.rfft(b, n)), n)
    lags = np.r_[np.arange(0, max_lag + 1), np.arange(-max_lag, 0)]
    lag = int(lags[np.argmax(xc[lags])])
    if lag >= 0:
        a, b = a[lag:], b
    else:
        a, b = a, b[-lag:]
    m = min(len(a), len(b))
    return a[:m], b[:m], lag


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])


def _envelope(x: np.ndarray, hop: int = 320) -> np.ndarray:
    n = len(x) // hop
    return np.sqrt((x[: n * hop].astype(np.float64).reshape(n, hop) ** 2).mean(axis=1))


def test_reference_wav(reference):
    assert reference.dtype == np.float32
    assert reference.ndim == 1
    assert reference.flags.c_contiguous
    assert len(reference) == JFK_SAMPLES
    assert 0.05 < float(np.sqrt(np.mean(reference**2))) < 0.5


@pytest.mark.parametrize("name", AUDIO_FILES)
def test_formats_decode_to_16k_mono(made, reference, name):
    samples = load_audio(made / name)
    assert samples.dtype == np.float32 and samples.ndim == 1
    assert abs(len(samples) - JFK_SAMPLES) <= TOLERANCE, len(samples)
    assert np.isfinite(samples).all()
    a, b, lag = _aligned(reference, samples)
    wave = _corr(a, b)
    env = _corr(_envelope(a), _envelope(b))
    scale = 0.75 if "stereo" in name else 1.0
    level = float(np.sqrt(np.mean(b.astype(np.float64) ** 2)) / np.sqrt(np.mean(a**2.0)))
    print(
        f"{name}: {len(samples)} samples, lag {lag}, waveform r={wave:.4f}, "
        f"envelope r={env:.4f}, level {level:.3f}"
    )
    assert abs(lag) <= 2000
    assert env > 0.98
    assert wave > 0.9
    assert abs(level - scale) < 0.1 * scale


def test_lossless_flac_is_bit_identical(made, reference):
    flac = _core.decode_file(made / "jfk.flac", SAMPLE_RATE)
    np.testing.assert_array_equal(flac, reference)


def test_shared_flac_mp3_agree_with_wav(data_dir, reference):
    # tests/data/shared/jfk.flac is 44.1 kHz stereo: equal within resampling error.
    flac = load_audio(data_dir / "jfk.flac")
    assert len(flac) == JFK_SAMPLES
    assert float(np.max(np.abs(flac - reference))) < 1e-3
    mp3 = load_audio(data_dir / "jfk.mp3")
    a, b, _ = _aligned(reference, mp3)
    assert _corr(a, b) > 0.995


def test_44k_stereo_downmix_matches_array_path(made):
    path = made / "jfk_44k_stereo.wav"
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (2, 44100, 2)
        frames = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, 2)
    assert np.abs(frames[:, 0].astype(float) - 2 * frames[:, 1]).max() <= 4  # R = L / 2
    # At the file's own rate the decode is exactly the mean of the channels.
    native = _core.decode_file(path, 44100)
    np.testing.assert_allclose(native, frames.mean(axis=1) / 32768.0, atol=1e-7)
    # The array path (int16 frames, 44.1 kHz) and the file path agree.
    from_file = load_audio(path)
    from_array = load_audio(frames, sample_rate=44100)
    assert len(from_array) == len(from_file)
    assert float(np.max(np.abs(from_array - from_file))) < 1e-5


def test_output_rates(jfk_wav):
    for rate in (8000, 22050, 44100, 48000):
        samples = _core.decode_file(jfk_wav, rate)
        assert abs(len(samples) - 11 * rate) <= 2


def test_no_audio_stream(made):
    with pytest.raises(saywho.AudioError, match="no audio stream") as info:
        load_audio(made / "video_only.mp4")
    assert "video_only.mp4" in str(info.value)


def test_path_types(jfk_wav, reference):
    for source in (str(jfk_wav), jfk_wav, os.fsencode(jfk_wav)):
        np.testing.assert_array_equal(load_audio(source), reference)


def test_unusual_file_names(tmp_path, jfk_wav, reference):
    for name in ("http:not_a_url.wav", "naïve résumé ñ.wav", "spaces and %d %s.wav"):
        path = tmp_path / name
        shutil.copy(jfk_wav, path)
        np.testing.assert_array_equal(load_audio(path), reference)


# ---------------------------------------------------------------- errors


def _expect_audio_error(path: Path, match: str | None = None) -> str:
    with pytest.raises(saywho.AudioError) as info:
        load_audio(path)
    message = str(info.value)
    assert path.name in message, message
    if match:
        assert match in message, message
    assert isinstance(info.value, ValueError)
    return message


def test_missing_file(tmp_path):
    _expect_audio_error(tmp_path / "missing.wav", "No such file")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    _expect_audio_error(path, "empty")


def test_directory(tmp_path):
    path = tmp_path / "a_directory.wav"
    path.mkdir()
    _expect_audio_error(path, "directory")


def test_text_file(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("Ask not what your country can do for you.\n" * 20)
    _expect_audio_error(path)
    path = tmp_path / "notes.wav"
    path.write_text("Ask not what your country can do for you.\n" * 20)
    _expect_audio_error(path, "not a recognised audio or video format")


def test_truncated_wav_header(tmp_path, jfk_wav):
    path = tmp_path / "truncated.wav"
    path.write_bytes(jfk_wav.read_bytes()[:30])
    _expect_audio_error(path)


def test_header_only_wav(tmp_path, jfk_wav):
    data = jfk_wav.read_bytes()
    start = data.index(b"data") + 8
    path = tmp_path / "header_only.wav"
    path.write_bytes(data[:start])
    _expect_audio_error(path, "decodes to no samples")


def test_truncated_wav_body_gives_what_is_there(tmp_path, jfk_wav, reference):
    data = jfk_wav.read_bytes()
    start = data.index(b"data") + 8
    path = tmp_path / "half.wav"
    path.write_bytes(data[: start + JFK_SAMPLES])  # half the 16-bit samples
    np.testing.assert_array_equal(load_audio(path), reference[: JFK_SAMPLES // 2])


def test_random_bytes(tmp_path):
    rng = np.random.default_rng(7)
    path = tmp_path / "random.mp3"
    path.write_bytes(rng.integers(0, 256, 50000, dtype=np.uint8).tobytes())
    try:
        samples = load_audio(path)
    except saywho.AudioError as exc:
        assert path.name in str(exc)
    else:  # random bytes can look like MPEG audio; then they decode to noise
        assert np.isfinite(samples).all()
    path = tmp_path / "random.bin"
    path.write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    _expect_audio_error(path)


def test_bad_sample_rate_and_arguments(jfk_wav):
    for rate in (0, 999, 384001, -16000):
        with pytest.raises(saywho.OptionError, match="sample_rate"):
            _core.decode_file(jfk_wav, rate)
    with pytest.raises(TypeError):
        _core.decode_file(12, 16000)
    with pytest.raises(ValueError):
        _core.decode_file("a\0b.wav", 16000)
    with pytest.raises(saywho.OptionError):
        load_audio(jfk_wav, sample_rate=16000)


def test_threads_decode_in_parallel(made, reference):
    names = ["jfk.mp3", "jfk.m4a", "jfk.ogg", "jfk.opus", "jfk_vp9.webm", "jfk.flac"] * 2
    results: dict[int, np.ndarray] = {}

    def work(i: int, name: str) -> None:
        results[i] = load_audio(made / name)

    threads = [threading.Thread(target=work, args=(i, n)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(6):
        np.testing.assert_array_equal(results[i], results[i + 6])
    np.testing.assert_array_equal(results[5], reference)


def test_ffmpeg_prints_nothing(made, tmp_path, jfk_wav):
    """Damaged files make FFmpeg's decoders complain; none of it may reach the
    terminal (checked at the file-descriptor level, in a fresh process)."""
    mp3 = bytearray((made / "jfk.mp3").read_bytes())
    for i in range(2000, len(mp3), 997):
        mp3[i] ^= 0x5A
    (tmp_path / "damaged.mp3").write_bytes(bytes(mp3))
    (tmp_path / "cut.m4a").write_bytes((made / "jfk.m4a").read_bytes()[:3000])
    (tmp_path / "noise.ogg").write_bytes(np.random.default_rng(1).bytes(20000))
    script = (
        "import sys\n"
        "from saywho.audio.decode import load_audio\n"
        "for p in sys.argv[1:]:\n"
        "    try: load_audio(p)\n"
        "    except Exception as e: pass\n"
    )
    paths = [str(tmp_path / n) for n in ("damaged.mp3", "cut.m4a", "noise.ogg")]
    proc = subprocess.run(
        [sys.executable, "-c", script, *paths],
        capture_output=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert proc.stdout == b"" and proc.stderr == b"", proc.stderr.decode(errors="replace")


# ----------------------------------------------------------------- arrays


def _sine(freq: float, rate: int, seconds: float, amp: float = 0.5) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _peak_frequency(x: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.argmax(spectrum) * rate / len(x))


def test_array_needs_sample_rate():
    with pytest.raises(saywho.OptionError, match="sample_rate"):
        load_audio(np.zeros(1600, dtype=np.float32))
    with pytest.raises(saywho.OptionError):
        load_audio(np.zeros(1600, dtype=np.float32), sample_rate=999)
    with pytest.raises(saywho.OptionError):
        load_audio(np.zeros(1600, dtype=np.float32), sample_rate=16000.5)


def test_array_same_rate_is_unchanged():
    x = _sine(440, 16000, 1.0)
    y = load_audio(x, sample_rate=16000)
    assert y.dtype == np.float32 and y.ndim == 1
    np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(load_audio(x.astype(np.float64), sample_rate=16000), x)
    np.testing.assert_array_equal(load_audio(list(x[:100]), sample_rate=16000), x[:100])


def test_array_stereo_downmix():
    rng = np.random.default_rng(3)
    stereo = rng.uniform(-0.5, 0.5, size=(8000, 2)).astype(np.float32)
    mono = load_audio(stereo, sample_rate=16000)
    np.testing.assert_allclose(mono, stereo.mean(axis=1), atol=1e-7)
    # (channels, frames) is taken as the transpose.
    np.testing.assert_array_equal(load_audio(stereo.T, sample_rate=16000), mono)
    np.testing.assert_array_equal(load_audio(np.asfortranarray(stereo), sample_rate=16000), mono)
    six = rng.uniform(-0.5, 0.5, size=(4000, 6)).astype(np.float32)
    np.testing.assert_allclose(load_audio(six, sample_rate=16000), six.mean(axis=1), atol=1e-6)


def test_array_resample_44100_to_16000():
    x = _sine(1000.0, 44100, 2.0)
    y = load_audio(x, sample_rate=44100)
    assert abs(len(y) - round(len(x) * 16000 / 44100)) <= 1
    assert abs(_peak_frequency(y, 16000) - 1000.0) < 1.0
    rms = float(np.sqrt(np.mean(y[1000:-1000].astype(np.float64) ** 2)))
    assert abs(rms - 0.5 / math.sqrt(2)) < 0.01
    # Content above the new Nyquist frequency is filtered out, not aliased.
    high = load_audio(_sine(12000.0, 44100, 1.0), sample_rate=44100)
    assert float(np.sqrt(np.mean(high[1000:-1000] ** 2))) < 0.01


def test_array_upsample_and_core_resample():
    x = _sine(300.0, 8000, 1.0)
    y = load_audio(x, sample_rate=8000)
    assert abs(len(y) - 16000) <= 1
    assert abs(_peak_frequency(y, 16000) - 300.0) < 1.0
    z = _core.resample(np.stack([x, x], axis=1), 8000, 16000)
    np.testing.assert_allclose(z, y, atol=1e-6)
    with pytest.raises(saywho.OptionError):
        _core.resample(x, 8000, 500000)
    with pytest.raises(saywho.OptionError):
        _core.resample(np.zeros((10, 65), np.float32), 16000, 16000)
    with pytest.raises(saywho.OptionError):
        _core.resample(np.zeros((10, 2, 2), np.float32), 16000, 16000)


def test_array_integer_pcm_is_scaled():
    x = (_sine(440, 16000, 0.5) * 32767).astype(np.int16)
    y = load_audio(x, sample_rate=16000)
    np.testing.assert_allclose(y, x / 32768.0, atol=1e-7)
    u8 = np.array([0, 128, 255], dtype=np.uint8)
    np.testing.assert_allclose(load_audio(u8, sample_rate=16000), [-1.0, 0.0, 127 / 128])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_array_non_finite_rejected(bad):
    x = _sine(440, 16000, 0.5)
    x[1234] = bad
    with pytest.raises(saywho.AudioError, match="finite"):
        load_audio(x, sample_rate=16000)
    with pytest.raises(saywho.AudioError, match="finite"):
        load_audio(np.stack([x, x], axis=1), sample_rate=44100)


def test_array_empty_or_malformed_rejected():
    for empty in (np.zeros(0, np.float32), np.zeros((0, 2), np.float32), []):
        with pytest.raises(saywho.AudioError):
            load_audio(empty, sample_rate=16000)
    with pytest.raises(saywho.AudioError):
        load_audio(np.zeros((2, 3, 4), np.float32), sample_rate=16000)
    with pytest.raises(saywho.AudioError):
        load_audio(np.zeros(10, np.complex64), sample_rate=16000)
    with pytest.raises(saywho.AudioError):
        load_audio(np.array(["a", "b"]), sample_rate=16000)
    with pytest.raises(saywho.AudioError):
        _core.resample(np.zeros(0, np.float32), 16000, 16000)


def test_top_level_reexport():
    assert saywho.load_audio is load_audio
    assert saywho.SAMPLE_RATE == SAMPLE_RATE == 16000
