"""The decoder step's budget on the GPU, checked on the emulator (issue 37):
the logits rules, log-softmax and the search's top-k run on the device
(backend.h search_step), so per step only the rows' best tokens come down,
and the tokens are the CPU path's. The counters are the backend's own code,
the same on a GPU (docs/cuda_backend.md, "The step budget").
"""

from __future__ import annotations

import os

import pytest

from saywho._internal.device import open_runtime
from saywho.whisper.generate import GenerateOptions, generate_windows
from saywho.whisper.options import TranscribeOptions
from saywho.whisper.segments import N_FRAMES, pad_window
from saywho.whisper.transcribe import WhisperModel

from .weights import test_model_dir

# What a step costs today on tiny.en: 420 bytes down for beam 5 (5 rows x
# 10 candidates x (id, score) + the no-speech float per row), 12 for greedy;
# the host waits once a step, for the candidates' download (1.0 a step with
# timestamps, 1.04 without: one wait more in the call, over fewer steps):
# uploads (the step's ids and length, the beams' reorder index, the mask once
# a call) are staged in pinned memory and queued without a wait since issue
# 38. A one-token step replays the decoder's captured graph: the beams'
# reorder gathered first, the layers, then the search step, which reads the
# rows' plans from the ids block: 1 graph launch and no launch a step
# (issue 37; before the graph, 99.6 launches with beam 5; before the search
# joined it, 1 launch and 1 graph launch). Without timestamps the call adds
# 1 graph launch and 1 launch to its 25 steps: the prompt's first token on
# one row (a graph of its own, with the search that brings the no-speech
# probability down) and the copy of that row to the beams.
BYTES_DOWN = 4096
HOST_SYNCS = 1.05
# (launches, graph launches) of the call beyond its steps' one graph each
SETUP = {False: (0, 0), True: (1, 1)}


class JfkDecodes:
    """tiny.en on jfk's one window, as the seek loop decodes it, on each
    device and compute type the tests ask for. Encode once, decode many: an
    emulated encode costs more than a beam-5 decode of the window (float32)
    and an int8 one over a minute, so each (device, compute type) gets one
    runtime, one model and one encoder output for the module, and each
    decode (device, beam, timestamps, length, compute type, graphs setting)
    runs once, whichever test asks first. A decode's figures are its own:
    the counters are reset before it and the allocations are a difference.

    SAYWHO_CUDA_GRAPHS is read when a decoder state is made, so a graph and
    an eager decode read the same encoder output (the encoder's graph and
    eager paths give the same bits: tests/test_encoder_graph.py)."""

    def __init__(self, recordings):
        self.jfk = recordings["jfk"]
        self.opened: dict[tuple, tuple] = {}  # (device, compute type) -> (runtime, model, encoded)
        self.decoded: dict[tuple, tuple] = {}

    def __call__(
        self,
        device: str,
        beam: int,
        without_timestamps: bool = False,
        max_length: int = 448,
        compute_type: str = "float32",
    ) -> tuple:
        """(tokens, score, no-speech probability, the counters per step, the
        steps, the device allocations the generation made)."""
        graphs = os.environ.get("SAYWHO_CUDA_GRAPHS")
        key = (device, beam, without_timestamps, max_length, compute_type, graphs)
        if key not in self.decoded:
            runtime, model, encoded = self._open(device, compute_type)
            self.decoded[key] = _measured_decode(
                runtime, model, encoded, beam, without_timestamps, max_length
            )
        return self.decoded[key]

    def _open(self, device: str, compute_type: str) -> tuple:
        if (device, compute_type) not in self.opened:
            runtime = open_runtime(device)
            model = None
            try:
                model_dir = str(test_model_dir("tiny.en"))
                model = WhisperModel(model_dir, runtime=runtime, compute_type=compute_type)
                encoded = model.encode(pad_window(model.log_mel(self.jfk)[:, :N_FRAMES]))
            except BaseException:
                if model is not None:
                    model.close()
                runtime.close()
                raise
            self.opened[device, compute_type] = (runtime, model, encoded)
            # The first capture on a device's backend grows its products'
            # workspace (an allocation more; docs/cuda_backend.md, "The
            # products' workspace"). Done here, in a decode of two steps
            # that is not measured, every measured decode is a later one
            # whichever test runs first, as a recording's windows after the
            # first are: like with like.
            if device != "cpu":
                _generate(model, encoded, beam=5, without_timestamps=False, max_length=5)
        return self.opened[device, compute_type]

    def close(self) -> None:
        for runtime, model, encoded in self.opened.values():
            encoded.close()
            model.close()
            runtime.close()
        self.opened.clear()


def _generate(model, encoded, beam: int, without_timestamps: bool, max_length: int):
    options = model.decoding_options(TranscribeOptions(beam_size=beam))
    prompt = model.prompt_tokens([], "en", "transcribe", without_timestamps, None)
    return generate_windows(
        model,
        encoded,
        [prompt],
        model.special,
        GenerateOptions.from_options(options, beam_size=beam, patience=1.0, max_length=max_length),
        suppress_ids=model.config.get("suppress_ids", ()),
        suppress_ids_begin=model.config.get("suppress_ids_begin", ()),
    )[0]


def _measured_decode(runtime, model, encoded, beam, without_timestamps, max_length) -> tuple:
    runtime.counters(reset=True)
    allocs = runtime.memory()["total_allocs"]
    result = _generate(model, encoded, beam, without_timestamps, max_length)
    counted = runtime.counters()
    allocs = runtime.memory()["total_allocs"] - allocs
    per_step = None
    if counted is not None:
        per_step = {k: v / result.steps for k, v in counted.items()}
    return (
        result.sequences_ids[0],
        result.scores[0],
        result.no_speech_prob,
        per_step,
        result.steps,
        allocs,
    )


@pytest.fixture(scope="module")
def decode(recordings):
    decodes = JfkDecodes(recordings)
    yield decodes
    decodes.close()


@pytest.mark.parametrize("beam, without_timestamps", [(5, False), (1, False), (5, True)])
def test_step_budget_and_tokens_on_the_emulator(decode, beam, without_timestamps):
    tokens, score, no_speech, per_step, steps, _ = decode("cuda-emulated", beam, without_timestamps)
    cpu_tokens, cpu_score, cpu_no_speech, *_ = decode("cpu", beam, without_timestamps)
    assert tokens == cpu_tokens
    assert score == pytest.approx(cpu_score, abs=1e-4)
    assert no_speech == pytest.approx(cpu_no_speech, abs=1e-5)
    assert per_step["bytes_down"] <= BYTES_DOWN
    assert per_step["host_syncs"] <= HOST_SYNCS
    # every step is one graph launch, its search inside: a search (or any op)
    # launched beside the graph fails this
    setup_launches, setup_graphs = SETUP[without_timestamps]
    assert round(per_step["launches"] * steps) == setup_launches, per_step
    assert round(per_step["graph_launches"] * steps) == steps + setup_graphs, per_step


@pytest.mark.parametrize("beam", [1, 5])
def test_a_step_allocates_nothing_on_the_emulator(decode, beam):
    """The step's buffers (activations, ids, logits, the search's work) are
    made once per window, not per step: a generation cut short after a few
    steps makes as many device allocations as the whole one (a CUDA graph
    keeps the pointers it was captured with)."""
    *_, short_steps, short_allocs = decode("cuda-emulated", beam, max_length=10)
    *_, steps, allocs = decode("cuda-emulated", beam)
    assert short_steps < steps
    assert allocs == short_allocs


@pytest.mark.parametrize("beam", [5, 1])
def test_graphs_and_eager_steps_give_the_cpus_tokens(decode, monkeypatch, beam):
    """SAYWHO_CUDA_GRAPHS=0 keeps every op an eager launch: the same tokens
    and scores as the graph path and as the CPU."""
    graph = decode("cuda-emulated", beam)
    monkeypatch.setenv("SAYWHO_CUDA_GRAPHS", "0")
    eager = decode("cuda-emulated", beam)
    cpu = decode("cpu", beam)
    assert graph[3]["graph_launches"] > 0
    assert eager[3]["graph_launches"] == 0
    assert eager[3]["launches"] > graph[3]["launches"]
    assert graph[0] == eager[0] == cpu[0]
    assert graph[1] == eager[1]  # the same kernels in the same order
    assert graph[1] == pytest.approx(cpu[1], abs=1e-4)


@pytest.mark.parametrize("compute_type", ["float16", "int8_float16"])
def test_half_and_int8_steps_keep_the_budget_on_the_emulator(decode, compute_type):
    """The half and int8 products take their scratch from the workspace the
    backend keeps for its graphs (cuda/workspace.cu), so their steps are one
    graph too: the same budget as float32, and no allocation per step (the
    workspace is made once, before the first capture)."""
    *_, per_step, steps, allocs = decode("cuda-emulated", 5, compute_type=compute_type)
    *_, short_steps, short_allocs = decode(
        "cuda-emulated", 5, max_length=10, compute_type=compute_type
    )
    # every step one graph launch with its search inside, as float32's
    assert round(per_step["launches"] * steps) == 0, per_step
    assert round(per_step["graph_launches"] * steps) == steps, per_step
    assert per_step["host_syncs"] <= HOST_SYNCS
    assert per_step["bytes_down"] <= BYTES_DOWN
    assert short_steps < steps
    assert allocs == short_allocs


# float16 and int8_float16 over the whole window (their graph runs are the
# budget test's above, shared); bfloat16 and int8 over the first 10 tokens:
# what they add is their products captured from the workspace, which the
# first step already does, and an emulated int8 window costs over a minute
@pytest.mark.parametrize(
    "compute_type, max_length",
    [("float16", 448), ("bfloat16", 10), ("int8", 10), ("int8_float16", 448)],
)
def test_graph_and_eager_steps_agree_for_every_compute_type(
    decode, monkeypatch, compute_type, max_length
):
    """Beam 5 (its reorders gathered inside the graph): the captured step and
    SAYWHO_CUDA_GRAPHS=0's eager one run the same kernels in the same order,
    so the same tokens and the same score to the bit."""
    graph = decode("cuda-emulated", 5, max_length=max_length, compute_type=compute_type)
    monkeypatch.setenv("SAYWHO_CUDA_GRAPHS", "0")
    eager = decode("cuda-emulated", 5, max_length=max_length, compute_type=compute_type)
    assert graph[3]["graph_launches"] > 0
    assert eager[3]["graph_launches"] == 0
    assert graph[0] == eager[0]
    assert graph[1] == eager[1]
    assert graph[2] == eager[2]
