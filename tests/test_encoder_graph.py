"""The encoder's window as one CUDA graph (issue 37), checked on the emulator:
captured at the first window of a batch size, replayed for the later ones
(whisper_encoder_graph.c), it gives the eager path's bits, a later window
costs the host one graph launch and no wait, allocates nothing, and closing
the model gives its graphs' buffers back. SAYWHO_CUDA_GRAPHS=0 keeps every
op an eager launch. The counters are the backend's own code, the same on a
GPU (docs/cuda_backend.md, "The step budget"). That the graph encoder's
output decodes the CPU's tokens, by the graph and the eager step, is
tests/test_gpu_step_budget.py's test_graphs_and_eager_steps_give_the_cpus_tokens
(one encode shared by its decodes); the eager encoder's output is the same
bits (the first test here), so it decodes them too; and the emulated golden
of test_transcribe.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from saywho._internal.device import open_runtime
from saywho.whisper.segments import N_FRAMES, pad_window
from saywho.whisper.transcribe import WhisperModel

from .weights import test_model_dir

# A later window: the mel goes up as a staged copy and the graph is launched;
# nothing else is queued and the host does not wait (before the graph: 83
# launches and 1 wait per window on tiny.en).
LATER_WINDOW = {"launches": 0, "graph_launches": 1, "host_syncs": 0, "bytes_down": 0}


def _windows(model, recordings) -> list[np.ndarray]:
    """Three real windows: jfk, and the first two of the short recording."""
    jfk = model.log_mel(recordings["jfk"])
    short = model.log_mel(recordings["short"])
    return [
        pad_window(jfk[:, :N_FRAMES]),
        pad_window(short[:, :N_FRAMES]),
        pad_window(short[:, N_FRAMES : 2 * N_FRAMES]),
    ]


@pytest.fixture(scope="module")
def emulated():
    """tiny.en on its own emulated runtime: its counters are this module's."""
    runtime = open_runtime("cuda-emulated")
    model = WhisperModel(str(test_model_dir("tiny.en")), runtime=runtime)
    yield runtime, model
    model.close()
    runtime.close()


def _encode(model, mel: np.ndarray, monkeypatch, graphs: bool) -> np.ndarray:
    """The encoder output of ``mel`` by the graph or the eager path."""
    monkeypatch.setenv("SAYWHO_CUDA_GRAPHS", "1" if graphs else "0")
    encoded = model.encode(mel)
    try:
        return encoded.numpy()
    finally:
        encoded.close()


def test_graph_and_eager_encoder_give_the_same_bits(emulated, recordings, monkeypatch):
    """The capture's first replay gives the eager path's output bit for bit:
    the same kernels in the same order (a later replay of a rig on a new mel
    is the third test's)."""
    _, model = emulated
    mel = _windows(model, recordings)[0]
    eager = _encode(model, mel, monkeypatch, graphs=False)
    first = _encode(model, mel, monkeypatch, graphs=True)
    assert eager.shape == (1, 1500, 384)
    assert np.isfinite(eager).all()
    assert np.array_equal(first, eager)


def test_a_batch_of_two_windows_is_captured_too(emulated, recordings, monkeypatch):
    """The batched pipeline's encoder (batch > 1): its own rig, the eager bits."""
    _, model = emulated
    mel = np.stack(_windows(model, recordings)[1:])
    eager = _encode(model, mel, monkeypatch, graphs=False)
    graph = _encode(model, mel, monkeypatch, graphs=True)
    assert eager.shape == (2, 1500, 384)
    assert not np.array_equal(eager[0], eager[1])
    assert np.array_equal(graph, eager)


def test_later_windows_replay_and_a_third_output_held_runs_eager(emulated, recordings, monkeypatch):
    """Two outputs held (the seek loop encodes the next window while the
    last one's output is alive) lend out both rigs: a third window runs at
    once into its own memory and leaves theirs alone. Once a rig is given
    back, a window replays it: one graph launch, no host wait, nothing
    down, only the mel up, no allocation, the eager window's bits."""
    runtime, model = emulated
    monkeypatch.delenv("SAYWHO_CUDA_GRAPHS", raising=False)
    w0, w1, w2 = _windows(model, recordings)
    held = [model.encode(w0), model.encode(w1)]
    before = [h.numpy() for h in held]

    runtime.counters(reset=True)
    with model.encode(w2) as third:
        counted = runtime.counters(reset=True)
        eager = third.numpy()
    assert counted["graph_launches"] == 0 and counted["launches"] > 50, counted
    for h, b in zip(held, before):
        assert np.array_equal(h.numpy(), b)
    held.pop(0).close()

    allocs = runtime.memory()["total_allocs"]
    runtime.counters(reset=True)
    with model.encode(w2) as later:
        counted = runtime.counters(reset=True)
        assert runtime.memory()["total_allocs"] == allocs
        assert np.array_equal(later.numpy(), eager)  # a replay reads the new mel
    assert {k: counted[k] for k in LATER_WINDOW} == LATER_WINDOW, counted
    assert counted["bytes_up"] == w2.nbytes
    held[0].close()


def test_closing_the_model_gives_the_graphs_buffers_back(recordings, monkeypatch):
    """The rigs (activations, outputs, graphs) stay with the model between
    windows and go with it."""
    monkeypatch.delenv("SAYWHO_CUDA_GRAPHS", raising=False)
    runtime = open_runtime("cuda-emulated")
    try:
        with WhisperModel(str(test_model_dir("tiny.en")), runtime=runtime) as model:
            weights = runtime.memory()["allocated"]
            model.encode(_windows(model, recordings)[0]).close()
            # one rig: at least tiny.en's 1 + 2 x 4 outputs of [1500, 384] floats
            assert runtime.memory()["allocated"] - weights > 9 * 1500 * 384 * 4
        assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()


# The half and int8 encoders (issue 37): their products narrow or quantize
# the activations into scratch that the backend's workspace serves inside
# the window's graph (cuda/workspace.cu; the capture is taken again while
# the workspace grows to the products' sizes, runtime/graph_capture.c).
# float16 covers the half products and convolutions, int8_float16 the int8
# products (bfloat16 and int8 take the same paths with the other narrow
# type). Three encodes a compute type, one model: an emulated float16
# encode of tiny.en costs about 30 s, an int8 one about a minute.
@pytest.mark.parametrize("compute_type", ["float16", "int8_float16"])
def test_half_and_int8_windows_replay_with_the_eager_bits(recordings, monkeypatch, compute_type):
    """The first window captures the rig (0 launches: the capture only
    records), a later one replays it at the float32 window's cost with no
    allocation and gives SAYWHO_CUDA_GRAPHS=0's bits for its own mel; closing
    the model gives back every byte, the workspace its graph held too."""
    runtime = open_runtime("cuda-emulated")
    try:
        model_dir = str(test_model_dir("tiny.en"))
        with WhisperModel(model_dir, runtime=runtime, compute_type=compute_type) as model:
            w0, w1, _ = _windows(model, recordings)
            monkeypatch.setenv("SAYWHO_CUDA_GRAPHS", "1")
            runtime.counters(reset=True)
            model.encode(w0).close()
            first = runtime.counters(reset=True)
            assert {k: first[k] for k in LATER_WINDOW} == LATER_WINDOW, first

            allocs = runtime.memory()["total_allocs"]
            with model.encode(w1) as later:
                counted = runtime.counters(reset=True)
                assert runtime.memory()["total_allocs"] == allocs
                graph = later.numpy()
            assert {k: counted[k] for k in LATER_WINDOW} == LATER_WINDOW, counted
            assert counted["bytes_up"] == w1.nbytes

            eager = _encode(model, w1, monkeypatch, graphs=False)
            assert runtime.counters()["launches"] > 100
            assert eager.shape == (1, 1500, 384)
            assert np.isfinite(eager).all()
            assert np.array_equal(graph, eager)
        assert runtime.memory()["allocated"] == 0
    finally:
        runtime.close()
