"""Diarization batched on the device (issue 38), proven on the emulator:
segmentation chunks and GE2E partials a batch per call, each call one copy
up and one down, and the host waits only for the download: uploads are
staged in pinned memory and queued (backend_cuda.cu). The counters are
those of docs/cuda_backend.md, the backend's own code, the same on a GPU;
the answers are the CPU's.
"""

from __future__ import annotations

import numpy as np
import pytest

import saywho
from saywho.diarization import Diarizer
from saywho.diarization.device_batch import CPU_BATCH, DEVICE_BATCH, chunk_batch
from saywho.diarization.segmentation import SegmentationModel, load_segmentation

from .conftest import shared_file
from .weights import test_diarization_models

SEG_OUT_PER_CHUNK = 589 * 7 * 4  # log-probabilities of 7 classes, float32


@pytest.fixture(scope="module")
def speech():
    return saywho.load_audio(shared_file("two_speakers.wav"))


def test_batch_size_follows_the_device_and_its_free_memory():
    assert chunk_batch("cpu", 1 << 40) == CPU_BATCH
    assert chunk_batch("cuda", 80 << 30) == DEVICE_BATCH == 32
    assert chunk_batch("cuda", 512 << 20) == 8  # a quarter of it, 16 MiB a chunk
    assert chunk_batch("cuda", 0) == 1


def test_segmentation_batches_wait_once_per_call(runtimes, speech):
    """21 chunks of real speech at pyannote's 1 s step, 8 to a call on the
    emulated GPU: per call the span goes up in one copy and the windows'
    first frames, scales and shifts in another (neither waited for), the
    scores come down in one (the one wait); the scores are the CPU's."""
    seg, _ = test_diarization_models()
    tensors = load_segmentation(seg)
    window, step = 160_000, 16_000
    starts = np.arange(0, len(speech) - window + 1, step, dtype=np.int64)
    device = runtimes["cuda-emulated"]
    with SegmentationModel(tensors, runtimes["cpu"], batch_size=8) as model:
        want = model.run_span(speech, starts, window)
    with SegmentationModel(tensors, device, batch_size=8) as model:
        device.counters(reset=True)
        got = model.run_span(speech, starts, window)
        counted = device.counters(reset=True)
    calls = -(-len(starts) // 8)
    assert counted["host_syncs"] == calls
    assert counted["bytes_down"] == got.nbytes == len(starts) * SEG_OUT_PER_CHUNK
    assert np.abs(np.exp(got) - np.exp(want)).max() <= 1e-3
    assert (got.argmax(-1) == want.argmax(-1)).mean() > 0.999


def test_ge2e_partials_are_summed_on_the_device(runtimes, speech):
    """Sequences of real speech's mel frames, cut into partials: on the
    emulated GPU each sequence's partials are summed there and one embedding
    per sequence comes down; equal to the CPU's float64 mean to float32
    rounding."""
    from saywho.diarization.embedding_ge2e import GE2EEncoder, load_ge2e

    tensors = load_ge2e(test_diarization_models()[1])
    with GE2EEncoder(tensors, runtimes["cpu"]) as model:
        mel, _ = model.features(speech[: 16000 * 12])
        # 12 s, 4.5 s, a short 0.8 s one, nothing: 9, 5, 1 partials and none
        sequences = [mel[:1200], mel[100:550], mel[900:980], mel[:0]]
        want = model.embed_sequences(sequences)
    device = runtimes["cuda-emulated"]
    with GE2EEncoder(tensors, device, batch_size=10) as model:  # 9 + 5 > 10: two calls
        device.counters(reset=True)
        got = model.embed_sequences(sequences)
        counted = device.counters(reset=True)
    assert counted["bytes_down"] == 3 * 256 * 4
    assert counted["host_syncs"] == 2  # the two calls' downloads
    assert np.isnan(got[3]).all() and np.isnan(want[3]).all()
    np.testing.assert_allclose(got[:3], want[:3], atol=1e-5)


def test_diarization_chunks_within_the_budget(runtimes, speech):
    """The whole diarization of 30 s on the emulated GPU, 8 chunks a batch:
    the host waits for segmentation's download and GE2E's, nothing else,
    per batch (the issue's budget: no wait inside a batch), and the turns
    are the CPU's."""
    seg, emb = test_diarization_models()
    device = runtimes["cuda-emulated"]
    with Diarizer(seg, emb, runtime=device, batch_size=8) as d:
        chunks = len(d._chunk_starts(len(speech)))
        device.counters(reset=True)
        result = d(speech)
        counted = device.counters(reset=True)
    with Diarizer(seg, emb, runtime=runtimes["cpu"], batch_size=8) as d:
        cpu = d(speech)
    batches = -(-chunks // 8)
    print(f"{chunks} chunks, {batches} batches: {counted}")
    assert counted["host_syncs"] <= 2 * batches
    # down: the scores, and one embedding per (chunk, speaker) at most: GE2E's
    # partials are summed on the device
    assert counted["bytes_down"] <= chunks * (SEG_OUT_PER_CHUNK + 3 * 256 * 4)
    assert result.speakers == cpu.speakers
    assert [t.speaker for t in result.turns] == [t.speaker for t in cpu.turns]
    for ours, theirs in zip(result.turns, cpu.turns):
        assert abs(ours.start - theirs.start) <= 0.017 and abs(ours.end - theirs.end) <= 0.017
    np.testing.assert_allclose(result.embeddings, cpu.embeddings, atol=2e-3)


def test_default_campp_diarization_within_the_budget(runtimes, tmp_path, monkeypatch):
    """The default models (segmentation-3.0 and CAM++, as the wheel ships
    them) on jfk (2 chunks, one batch) on the emulated GPU: one wait for
    the scores, one for the embeddings, at most one 192-float embedding per
    (chunk, speaker) down; the CPU's speakers and embeddings. CAM++ runs on
    the backend's fused entries (cuda/fused.cu): its 3x3 convolutions find
    their taps on the device, so no id tables go up (437.5 launches and 1.5
    MB up a chunk; the composed path took 583.5 and 9.7 MB). Its features
    are made on the device from the span (cuda/features.cu), and its chunk
    tables once per model: a second diarization sends the span's audio once,
    read by both networks (an AudioSpan), and 233 KB of tables a chunk (was
    1.5 MB: the kept frames' features and the chunk tables at every call)."""
    from saywho.models.bundled import default_diarization_models

    jfk = saywho.load_audio(shared_file("jfk.wav"))
    seg, emb = default_diarization_models()
    device = runtimes["cuda-emulated"]
    with Diarizer(seg, emb, runtime=device) as d:
        assert d.batch_size == DEVICE_BATCH
        chunks = len(d._chunk_starts(len(jfk)))
        d(jfk)  # the models' tables, made once
        log = tmp_path / "copies.log"  # the emulator's copies (docs/cuda_emulator.md)
        monkeypatch.setenv("SAYWHO_CUDA_EMU_COPY_LOG", str(log))
        device.counters(reset=True)
        result = d(jfk)
        counted = device.counters(reset=True)
        monkeypatch.delenv("SAYWHO_CUDA_EMU_COPY_LOG")
    with Diarizer(seg, emb, runtime=runtimes["cpu"]) as d:
        cpu = d(jfk)
    print(f"{chunks} chunks: {counted}")
    assert counted["host_syncs"] <= 2
    assert counted["bytes_down"] <= chunks * (SEG_OUT_PER_CHUNK + 3 * 192 * 4)
    assert counted["launches"] <= 450 * chunks
    # up: jfk's 11 s is the one batch's span, once (an AudioSpan that the
    # segmentation and CAM++'s features both read), then the tables of the
    # shapes; with the features made on the host CAM++'s span would not go
    # up, they would (320 bytes a kept frame)
    copies = [line.split() for line in log.read_text().splitlines()]
    ups = [int(n) for kind, n, _ in copies if kind == "H2D"]
    assert sum(ups) == counted["bytes_up"]
    span = jfk.astype(np.float32).nbytes
    assert len([n for n in ups if n >= span]) == 1 and span in ups
    assert counted["bytes_up"] <= span + 300_000 * chunks
    assert result.speakers == cpu.speakers
    np.testing.assert_allclose(result.embeddings, cpu.embeddings, atol=2e-3)


def test_ge2e_mels_made_on_the_device_match_the_cpu(runtimes, speech):
    """GE2E's mels made from the span on the emulated GPU (embed_span): the
    span goes up once, then an int32 id a partial frame instead of 40
    floats; each sequence's embedding is the CPU's (the host's mels) within
    the CAM++ tests' tolerance, each sequence's gain applied on both, an
    empty sequence NaN on both. 4 s of real speech, its second half made
    quiet (30 dB down), in calls of at most 4 partials: two (3 + 1, then 2)."""
    from saywho.diarization.embedding_ge2e import (
        GE2EEncoder,
        frame_energy,
        load_ge2e,
        select_frames,
    )

    tensors = load_ge2e(test_diarization_models()[1])
    span = speech[16000 * 5 : 16000 * 9].copy()
    span[32000:] *= np.float32(10 ** (-30 / 20))
    frames = len(span) // 160
    masks = np.zeros((4, frames), np.float32)
    masks[0, 0:251] = 1  # 3 partials
    masks[1, 30:90] = masks[1, 120:160] = 1  # one partial of 100 frames
    masks[2, 210:390] = 1  # mostly the quiet half: 2 partials, a gain above 1
    # masks[3] keeps nothing
    with GE2EEncoder(tensors, runtimes["cpu"]) as cpu:
        assert not cpu.mels_on_device()
        mel, energy = cpu.features(span)
        want = cpu.embed_sequences([cpu.select(mel, energy, m) for m in masks])
    energy = frame_energy(span, frames)
    sequences = [select_frames(energy, m) for m in masks]
    # resemblyzer raises speech quieter than -30 dBFS: every gain here is above 1
    assert sequences[2][1] > sequences[0][1] > 1
    device = runtimes["cuda-emulated"]
    with GE2EEncoder(tensors, device, batch_size=4) as model:
        assert model.mels_on_device()
        device.counters(reset=True)
        got = model.embed_span(span, sequences)
        counted = device.counters(reset=True)
    partial_frames = 3 * 160 + 100 + 2 * 160  # the partials' frames
    assert counted["host_syncs"] == 2  # a call's embeddings come down, nothing else waits
    assert counted["bytes_down"] == 3 * 256 * 4
    # the span, then a few KB of ids, gains and groups, against 144 KB of mels
    assert span.nbytes < counted["bytes_up"] <= span.nbytes + 2 * 2048 + 8 * partial_frames
    assert np.isnan(want[3]).all() and np.isnan(got[3]).all()
    assert np.abs(got[:3] - want[:3]).max() <= 1e-4 * np.abs(want[:3]).max()


def test_ge2e_run_span_is_refused_where_the_host_makes_the_mels(runtimes):
    """The CPU declines the mels entries: run_span says so."""
    from saywho._internal.native import _core
    from saywho.diarization.embedding_ge2e import GE2EEncoder, load_ge2e

    with GE2EEncoder(load_ge2e(test_diarization_models()[1]), runtimes["cpu"]) as model:
        with pytest.raises(_core.OptionError, match="does not make mels"):
            model.embed_span(np.zeros(16000, np.float32), [(np.arange(10), 1.0)])


def test_one_span_upload_serves_both_networks(runtimes, speech):
    """A ``_core.AudioSpan`` (the Diarizer's, one a batch on a GPU) is the
    span on the device: segmentation and GE2E read it instead of each
    uploading the span, their answers bit for bit those of their own
    uploads, each call a span's bytes lighter; a span of another length, a
    closed one or one of another Runtime is refused, naming the problem.
    12 s of real speech, 3 chunks."""
    from saywho._internal.native import _core
    from saywho.diarization.embedding_ge2e import (
        GE2EEncoder,
        frame_energy,
        load_ge2e,
        select_frames,
    )

    seg, emb = test_diarization_models()
    device = runtimes["cuda-emulated"]
    span = np.ascontiguousarray(speech[: 16000 * 12], np.float32)
    offsets, window = np.array([0, 16000, 32000]), 160_000
    masks = np.zeros((2, len(span) // 160), np.float32)
    masks[0, 100:400] = masks[1, 700:1100] = 1
    sequences = [select_frames(frame_energy(span, masks.shape[1]), m) for m in masks]
    segmentation = SegmentationModel(load_segmentation(seg), device, batch_size=8)
    with segmentation, GE2EEncoder(load_ge2e(emb), device) as ge2e:
        device.counters(reset=True)
        own = segmentation.run_span(span, offsets, window), ge2e.embed_span(span, sequences)
        alone = device.counters(reset=True)
        with _core.AudioSpan(device, {"samples": span}) as shared:
            once = device.counters(reset=True)
            got = (
                segmentation.run_span(span, offsets, window, shared),
                ge2e.embed_span(span, sequences, shared),
            )
            read = device.counters(reset=True)
            with pytest.raises(_core.OptionError, match="span on the device is not"):
                ge2e.embed_span(span[:-160], sequences, shared)
        with pytest.raises(_core.ModelError, match="closed"):
            ge2e.embed_span(span, sequences, shared)
        with _core.AudioSpan(runtimes["cpu"], {"samples": span}) as elsewhere:
            with pytest.raises(_core.OptionError, match="another Runtime"):
                segmentation.run_span(span, offsets, window, elsewhere)
    assert once["bytes_up"] == span.nbytes and once["host_syncs"] == 0
    assert read["bytes_up"] == alone["bytes_up"] - 2 * span.nbytes
    assert read["host_syncs"] == alone["host_syncs"] == 2
    np.testing.assert_array_equal(got[0], own[0])
    np.testing.assert_array_equal(got[1], own[1])
