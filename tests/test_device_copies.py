"""No host round trip inside a stage: the copies between host and device that
a Whisper encoder forward, Whisper's decoding loop and a segmentation forward
make on the CUDA backend, counted by the emulator (SAYWHO_CUDA_EMU_COPY_LOG,
docs/cuda_emulator.md), with the stages marked in the same log.

Each stage may copy its input up and its output down, nothing else: a weight
or an activation going back and forth would show as a copy of its size.
"""

from __future__ import annotations

import numpy as np
import pytest

from saywho.features import log_mel_spectrogram
from saywho.whisper.generate import GenerateOptions, generate


class CopyLog:
    def __init__(self, path, monkeypatch):
        self.path = path
        path.write_text("")
        monkeypatch.setenv("SAYWHO_CUDA_EMU_COPY_LOG", str(path))

    def mark(self, stage: str) -> None:
        with self.path.open("a") as f:
            f.write(f"MARK {stage}\n")

    def stages(self) -> dict[str, list[tuple[str, int]]]:
        out, stage = {"load": []}, "load"  # before the first mark: loading
        for line in self.path.read_text().splitlines():
            kind, value = line.split()
            if kind == "MARK":
                stage = value
                out[stage] = []
            else:
                out[stage].append((kind, int(value)))
        return out


@pytest.fixture
def copy_log(tmp_path, monkeypatch):
    return CopyLog(tmp_path / "copies.log", monkeypatch)


def test_whisper_encoder_and_decoding_loop_copy_only_inputs_and_outputs(
    whisper_models, recordings, copy_log
):
    model = whisper_models["tiny.en@cuda-emulated"]
    mel = log_mel_spectrogram(recordings["jfk"], model.dims["n_mels"])
    window = np.zeros((1, model.dims["n_mels"], 3000), np.float32)
    window[0, :, : min(3000, mel.shape[1])] = mel[:, :3000]
    prompt = [model.special.sot, model.special.no_timestamps]

    copy_log.mark("encode")
    audio = model.encode(window)
    copy_log.mark("greedy")
    greedy = generate(model, audio, prompt, model.special, GenerateOptions(beam_size=1))
    copy_log.mark("beam")
    beam = generate(model, audio, prompt, model.special, GenerateOptions(beam_size=2))
    copy_log.mark("end")
    stages = copy_log.stages()

    # the encoder: the mel goes up, the features stay on the device
    assert stages["encode"] == [("H2D", window.nbytes)]
    n_vocab, ctx, d = (model.dims[k] for k in ("n_vocab", "n_text_ctx", "n_text_state"))
    logits = n_vocab * 4  # float32 scores of one sequence's last position

    def split(name):
        copies = stages[name]
        return [b for k, b in copies if k == "H2D"], [b for k, b in copies if k == "D2H"]

    # greedy: each step feeds one token id (and its position, cache row and
    # last index) up and brings one row of logits down
    up, down = split("greedy")
    assert set(down) == {logits}
    assert len(down) >= len(greedy.sequences_ids[0])
    assert max(up) <= 4 * len(prompt) and len(up) == 4 * len(down)
    # beam 2: the prompt is fed to one sequence, then the beams; reordering
    # the beams' caches sends row indices up (int32 per cached position), the
    # cache rows themselves move on the device
    up, down = split("beam")
    assert set(down) == {logits, 2 * logits}
    assert len(down) >= len(beam.sequences_ids[0])
    assert max(up) <= 4 * 2 * ctx
    assert sum(up) < 2 * ctx * d * 4  # less than one layer's key cache, all loop long


def test_segmentation_forward_copies_its_chunks_up_and_its_scores_down(runtimes, copy_log):
    import saywho
    from saywho.diarization.segmentation import SegmentationModel, load_segmentation
    from saywho.models.test_weights import test_weights_root

    from .conftest import shared_file

    path = test_weights_root() / "pyannote-segmentation-3.0" / "segmentation-3.0.onnx"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    audio = saywho.load_audio(shared_file("jfk.wav"))
    chunks = np.stack([audio[:160_000], audio[8_000:168_000]]).astype(np.float32)
    with SegmentationModel(load_segmentation(path), runtimes["cuda-emulated"]) as model:
        copy_log.mark("forward")
        scores = model.run(chunks)
        copy_log.mark("end")
    # one call for the batch: the chunks go up, the frame scores come down
    assert copy_log.stages()["forward"] == [("H2D", chunks.nbytes), ("D2H", scores.nbytes)]
    assert scores.shape[0] == 2 and scores.shape[-1] == 7
