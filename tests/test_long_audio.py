"""Long recordings are decoded in pieces onto disk (saywho.audio.store): the
same samples as in memory, read by every stage, counted in the memory lines,
no temporary file left behind, and memory that does not grow with length."""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import saywho
from saywho.audio.store import on_disk

from .conftest import SHARED_DATA, shared_file
from .diarization_growth import MEASURE as GROWTH
from .diarization_growth import save_real_chunks
from .long_recording import SHORT_MINUTES, assemble, write_long_flac
from .weights import test_model_dir


def _open_into(folder) -> list[str]:
    """What this process holds open or mapped from ``folder``."""
    folder = os.path.realpath(folder)
    held = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(folder):
            held.append(target)
    with open("/proc/self/maps") as maps:
        held += [line.split(None, 5)[-1] for line in maps if folder in line]
    return held


def test_a_long_file_comes_back_on_disk_bit_for_bit(tmp_path):
    jfk = shared_file("jfk.flac")
    whole = saywho.load_audio(jfk)
    assert not on_disk(whole)  # 11 s: in memory, as before
    stored = saywho.load_audio(jfk, in_memory_seconds=1, temp_dir=tmp_path)
    assert isinstance(stored, np.memmap) and on_disk(stored) and on_disk(stored[100:200])
    assert stored.dtype == np.float32 and stored.shape == whole.shape
    assert np.array_equal(stored, whole)
    # an unnamed file: nothing in the folder while it is used, nothing after
    assert os.listdir(tmp_path) == []
    assert _open_into(tmp_path)  # the map is the only handle
    del stored
    gc.collect()
    assert _open_into(tmp_path) == [] and os.listdir(tmp_path) == []


def test_a_corrupt_or_bad_call_leaves_nothing(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    broken = tmp_path / "broken.flac"
    broken.write_bytes(shared_file("jfk.flac").read_bytes()[:200] + os.urandom(4000))
    with pytest.raises(saywho.AudioError, match="broken.flac"):
        saywho.load_audio(broken, in_memory_seconds=0, temp_dir=store)
    assert os.listdir(store) == [] and _open_into(store) == []
    with pytest.raises(saywho.AudioError, match="jfk.flac.*temporary file"):
        saywho.load_audio(shared_file("jfk.flac"), in_memory_seconds=0, temp_dir=tmp_path / "no")
    with pytest.raises(saywho.OptionError, match="in_memory_seconds"):
        saywho.load_audio(shared_file("jfk.flac"), in_memory_seconds=-1)


def test_the_stages_read_the_store_and_the_memory_line_says_where_it_is(tmp_path):
    """Transcription and diarization of samples on disk give what the same
    samples in memory give; the memory line counts them on disk, not held."""
    wav = shared_file("two_speakers.wav")
    with saywho.Pipeline(model=str(test_model_dir("tiny.en")), device="cpu") as pipeline:
        stored = pipeline.load_audio(wav, in_memory_seconds=1, temp_dir=tmp_path)
        assert on_disk(stored)
        line = pipeline.memory().line("After Decode")
        assert f"| Audio 0.00 GiB (+{stored.nbytes / 2**30:.2f} GiB on disk) |" in line
        from_disk = pipeline.process(stored, beam_size=1)
        in_memory = pipeline.process(np.array(stored), beam_size=1)
    assert from_disk.text and from_disk.text == in_memory.text
    assert from_disk.turns == in_memory.turns
    assert [s.speaker for s in from_disk.segments] == [s.speaker for s in in_memory.segments]
    del stored, from_disk
    gc.collect()
    assert os.listdir(tmp_path) == [] and _open_into(tmp_path) == []


def test_whisper_reads_the_store_a_window_at_a_time(tmp_path, monkeypatch):
    """The log-mel of samples on disk is computed a window at a time and is
    the whole recording's (to float32's last bit, where the floor rounds);
    the seek loop over it gives the in-memory transcript across windows."""
    from saywho._internal.native import _core
    from saywho.whisper import windowed_mel

    samples = assemble(SHARED_DATA, SHORT_MINUTES)  # 42 s: two windows
    path = tmp_path / "two_windows.wav"
    _write_wav(path, samples)
    stored = saywho.load_audio(path, in_memory_seconds=1, temp_dir=tmp_path)
    whole = _core.log_mel_spectrogram(np.array(stored), n_mels=80, padding=160, threads=1)
    monkeypatch.setattr(windowed_mel, "PIECE_FRAMES", 1000)  # several pieces for the floor
    lazy = windowed_mel.WindowedLogMel(stored, 80, 1)
    assert lazy.shape == whole.shape
    for a, b in [(0, 3000), (1234, 4234), (whole.shape[1] - 1000, whole.shape[1] + 500)]:
        np.testing.assert_allclose(lazy[:, a:b], whole[:, a:b], rtol=0, atol=1e-6)
    monkeypatch.undo()
    with saywho.Pipeline(model=str(test_model_dir("tiny.en")), device="cpu") as pipeline:
        on_disk_segments, _ = pipeline.transcribe(stored, beam_size=1)
        in_memory_segments, _ = pipeline.transcribe(np.array(stored), beam_size=1)
    on_disk_text = [s.text for s in on_disk_segments]
    in_memory_text = [s.text for s in in_memory_segments]
    assert len(in_memory_text) > 1 and on_disk_text == in_memory_text


def _write_wav(path, samples: np.ndarray) -> None:
    import wave

    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


# The measuring processes' RssAnon watcher: the level when called, and a
# thread keeping the peak in peak[0] until done is set.
WATCH_RSS_ANON = textwrap.dedent(
    """
    import threading, time

    def rss_anon():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024

    def watch_rss_anon():
        before = rss_anon()
        peak, done = [before], threading.Event()
        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], rss_anon())
                time.sleep(0.01)
        threading.Thread(target=sample, daemon=True).start()
        return before, peak, done
    """
)


# The memory claim for the decode: decoding a recording holds no more
# anonymous memory (RssAnon: not the file-backed pages of the store) for a
# long one than for a short one, where before the samples were held whole.
# Each length runs in its own process, which samples its own RssAnon while it
# decodes and then reads the samples a 30 s window at a time, as the stages do.
# The FLACs are the speech detection test's, 12 and 48 minutes, written once
# (before: 20 minutes and 2 hours for this test alone): the 36 more minutes'
# samples held whole would be 138 MB, four times the bound.
# (Diarizing them too would take far longer than a test may on 2 cores;
# test_the_stages_read_the_store shows the stages read the store.)
MEASURE = WATCH_RSS_ANON + textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import saywho

    before, peak, done = watch_rss_anon()
    samples = saywho.load_audio(sys.argv[1], temp_dir=sys.argv[2])
    window = 30 * 16000
    loudest = max(float(np.abs(samples[i : i + window]).max())
                  for i in range(0, samples.size, window))
    done.set()
    print(json.dumps({"before": before, "peak": peak[0], "seconds": samples.size / 16000,
                      "on_disk": isinstance(samples, np.memmap), "loudest": loudest}))
    """
)


def _long_flac(path, minutes: float) -> None:
    """tests/long_recording.py's FLAC of ``minutes`` (FFmpeg must be there)."""
    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is needed to write the long recording")
    write_long_flac(SHARED_DATA, path, minutes)


@pytest.fixture(scope="module")
def long_flacs(tmp_path_factory) -> tuple:
    """FLACs of 12 and 48 minutes (both past the 10 minutes kept in
    memory), written once for the decoding and the speech detection
    memory tests."""
    folder = tmp_path_factory.mktemp("long_flacs")
    short, long = folder / "short.flac", folder / "long.flac"
    _long_flac(short, 12)
    _long_flac(long, 48)
    return short, long


def _measure(path, store, script: str = MEASURE) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path), str(store)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_decoding_memory_does_not_grow_with_the_length(tmp_path, long_flacs):
    store = tmp_path / "store"
    store.mkdir()
    short, long = long_flacs
    a, b = _measure(short, store), _measure(long, store)
    assert a["on_disk"] and b["on_disk"]  # both past the 10 minutes kept in memory
    assert b["seconds"] > 3.5 * a["seconds"] and b["loudest"] > 0.1
    grown = (b["peak"] - b["before"]) - (a["peak"] - a["before"])
    held_whole = (b["seconds"] - a["seconds"]) * 16000 * 4  # 36 more minutes: 138 MB
    print(
        f"RssAnon peak: {(a['peak'] - a['before']) / 2**20:.1f} MiB for 12 min, "
        f"{(b['peak'] - b['before']) / 2**20:.1f} MiB for 48 min "
        f"(the 36 more minutes' samples: {held_whole / 2**20:.0f} MiB)"
    )
    assert grown < held_whole / 4, (a, b)
    assert os.listdir(store) == []


# The same claim for transcribing only the speech: Silero over the recording
# (fed to the core 8.7 minutes at a time, its state carried), then the speech
# read back as the two modes read it, the batched mode's chunks of at most
# 30 s and the sequential mode's joined speech a window at a time, both
# straight from the store. Before, the VAD padded a copy of the whole
# recording and its LSTM ran over every window at once.
MEASURE_SPEECH = WATCH_RSS_ANON + textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import saywho
    from saywho import _core
    from saywho.audio.speech import SpeechMap
    from saywho.audio.vad import speech_sample_regions
    from saywho.whisper.batched import _vad_options, pack_chunks

    samples = saywho.load_audio(sys.argv[1], temp_dir=sys.argv[2])
    runtime = _core.Runtime(device="cpu", threads=2)
    before, peak, done = watch_rss_anon()
    regions = speech_sample_regions(samples, runtime, _vad_options(None))
    chunks = pack_chunks(regions)
    longest = max(c.samples(samples).size for c in chunks)
    joined = SpeechMap(regions, in_samples=True).joined(samples)
    window = 30 * 16000
    loudest = max(float(np.abs(joined[i : i + window]).max())
                  for i in range(0, joined.size, window))
    done.set()
    print(json.dumps({"before": before, "peak": peak[0], "seconds": samples.size / 16000,
                      "on_disk": isinstance(samples, np.memmap), "regions": len(regions),
                      "speech": joined.size / 16000, "longest_chunk": longest / 16000,
                      "loudest": loudest}))
    """
)


def test_speech_detection_memory_does_not_grow_with_the_length(tmp_path, long_flacs):
    store = tmp_path / "store"
    store.mkdir()
    short, long = long_flacs
    a, b = (_measure(path, store, MEASURE_SPEECH) for path in (short, long))
    assert a["on_disk"] and b["on_disk"]  # both past the 10 minutes kept in memory
    assert b["seconds"] > 3.5 * a["seconds"] and b["loudest"] > 0.1
    # the speech was found and read: most of the recording, in many regions
    assert b["speech"] > 0.8 * b["seconds"] and b["regions"] > 3 * a["regions"] > 30
    assert a["longest_chunk"] <= 30 and b["longest_chunk"] <= 30
    grown = (b["peak"] - b["before"]) - (a["peak"] - a["before"])
    held_whole = (b["seconds"] - a["seconds"]) * 16000 * 4  # 36 more minutes: 138 MB
    print(
        f"RssAnon peak: {(a['peak'] - a['before']) / 2**20:.1f} MiB for 12 min, "
        f"{(b['peak'] - b['before']) / 2**20:.1f} MiB for 48 min "
        f"(the 36 more minutes' samples: {held_whole / 2**20:.0f} MiB)"
    )
    assert grown < held_whole / 4, (a, b)
    assert os.listdir(store) == []


# Diarization's memory past its networks (tests/diarization_growth.py): the
# per-chunk arrays, the clustering and the reconstruction of 1 hour and of 3
# hours, from the bundled models' real output on 2 minutes of speech. Past an
# hour the clustering's matrix is at its cap and the growth is linear: 23.3
# MiB an hour measured (docs/diarization.md); the bound leaves room for the
# allocator. A whole-recording copy of the samples (220 MiB an hour) or the
# chunks' activity kept as int64 instead of bytes (42 MiB more an hour)
# would break it.
DIARIZATION_MIB_PER_HOUR = 32


def test_diarization_memory_grows_within_its_bound(tmp_path):
    saved = tmp_path / "chunks.npz"
    assert save_real_chunks(SHARED_DATA, saved) > 100
    a, b = (_measure(saved, hours, WATCH_RSS_ANON + GROWTH) for hours in (1, 3))
    assert b["chunks"] > 2.9 * a["chunks"] and a["speakers"] >= 2 and b["turns"] > 2.9 * a["turns"]
    per_hour = ((b["peak"] - b["before"]) - (a["peak"] - a["before"])) / 2
    print(
        f"diarization past the networks: RssAnon peak +{(a['peak'] - a['before']) / 2**20:.1f} "
        f"MiB for 1 h, +{(b['peak'] - b['before']) / 2**20:.1f} MiB for 3 h: "
        f"{per_hour / 2**20:.1f} MiB an hour"
    )
    assert per_hour <= DIARIZATION_MIB_PER_HOUR * 2**20, (a, b)
