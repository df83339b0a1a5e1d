"""WeSpeaker's ResNet34 (pyannote 3.1's speaker encoder) in saywho, against onnxruntime.

No trained weights for it exist on PyPI, so a state dict of the real shapes
and names is drawn at random (BatchNorm statistics included); the same
weights become an ONNX graph of Conv, BatchNormalization, Relu and the
statistics pooling, run by onnxruntime on the fbank of real speech, and a
torch-format checkpoint read back by saywho's loader.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import saywho
from saywho.diarization.embedding_resnet import (
    BLOCKS,
    CHANNELS,
    EMBED_DIM,
    ResNetEmbedding,
    _layer_names,
    fold_state_dict,
    load_resnet,
    weighted_stats,
)

from .conftest import GPU_DEVICES, shared_file
from .test_torch_checkpoint import Parameter, Writer, fake_torch  # noqa: F401 (fixture)


def random_state_dict(seed: int = 0) -> dict[str, np.ndarray]:
    """pyannote's names and shapes, He-initialised so activations stay O(1)."""
    rng = np.random.default_rng(seed)
    sd: dict[str, np.ndarray] = {}

    def conv(name, c_out, c_in, k):
        sd[name] = (rng.standard_normal((c_out, c_in, k, k)) * np.sqrt(2 / (c_in * k * k))).astype(
            np.float32
        )

    def bn(name, c):
        sd[f"{name}.weight"] = rng.uniform(0.5, 1.5, c).astype(np.float32)
        sd[f"{name}.bias"] = rng.normal(0, 0.1, c).astype(np.float32)
        sd[f"{name}.running_mean"] = rng.normal(0, 0.1, c).astype(np.float32)
        sd[f"{name}.running_var"] = rng.uniform(0.5, 2.0, c).astype(np.float32)

    conv("resnet.conv1.weight", CHANNELS[0], 1, 3)
    bn("resnet.bn1", CHANNELS[0])
    for name, c_in, c_out, stride in _layer_names():
        conv(f"resnet.{name}.conv1.weight", c_out, c_in, 3)
        bn(f"resnet.{name}.bn1", c_out)
        conv(f"resnet.{name}.conv2.weight", c_out, c_out, 3)
        bn(f"resnet.{name}.bn2", c_out)
        if stride != 1 or c_in != c_out:
            conv(f"resnet.{name}.shortcut.0.weight", c_out, c_in, 1)
            bn(f"resnet.{name}.shortcut.1", c_out)
    sd["resnet.seg_1.weight"] = (rng.standard_normal((EMBED_DIM, 5120)) * 0.02).astype(np.float32)
    sd["resnet.seg_1.bias"] = rng.normal(0, 0.1, EMBED_DIM).astype(np.float32)
    return sd


def onnx_graph(sd: dict[str, np.ndarray]) -> bytes:
    """The same network, unfolded, as onnxruntime runs it: fbank [B, T, 80] in."""
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(v, k) for k, v in sd.items()]
    nodes = [
        helper.make_node("Transpose", ["fbank"], ["bft"], perm=[0, 2, 1]),
        helper.make_node("Unsqueeze", ["bft", "one"], ["x0"]),
    ]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "one"))
    count = [0]

    def fresh() -> str:
        count[0] += 1
        return f"t{count[0]}"

    def conv_bn(x, conv, bn, stride, k, relu):
        y, z = fresh(), fresh()
        pad = 1 if k == 3 else 0
        nodes.append(
            helper.make_node(
                "Conv", [x, conv], [y], kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4
            )
        )
        names = [f"{bn}.{p}" for p in ("weight", "bias", "running_mean", "running_var")]
        nodes.append(helper.make_node("BatchNormalization", [y, *names], [z], epsilon=1e-5))
        if not relu:
            return z
        r = fresh()
        nodes.append(helper.make_node("Relu", [z], [r]))
        return r

    x = conv_bn("x0", "resnet.conv1.weight", "resnet.bn1", 1, 3, True)
    for name, _, _, stride in _layer_names():
        p = f"resnet.{name}"
        y = conv_bn(x, f"{p}.conv1.weight", f"{p}.bn1", stride, 3, True)
        y = conv_bn(y, f"{p}.conv2.weight", f"{p}.bn2", 1, 3, False)
        if f"{p}.shortcut.0.weight" in sd:
            x = conv_bn(x, f"{p}.shortcut.0.weight", f"{p}.shortcut.1", stride, 1, False)
        s, r = fresh(), fresh()
        nodes += [helper.make_node("Add", [y, x], [s]), helper.make_node("Relu", [s], [r])]
        x = r
    # statistics pooling over time (axis 3), unbiased variance, eps inside the root
    inits += [
        numpy_helper.from_array(np.array([3], np.int64), "time"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "flat"),
        numpy_helper.from_array(np.array(1e-7, np.float32), "eps"),
        numpy_helper.from_array(np.array(1.0, np.float32), "onef"),
        numpy_helper.from_array(sd["resnet.seg_1.weight"].T.copy(), "seg_t"),
    ]
    nodes += [
        helper.make_node("ReduceMean", [x], ["mean"], axes=[3], keepdims=1),
        helper.make_node("Sub", [x, "mean"], ["dev"]),
        helper.make_node("Mul", ["dev", "dev"], ["sq"]),
        helper.make_node("ReduceSum", ["sq", "time"], ["ss"], keepdims=0),
        helper.make_node("Shape", [x], ["shape"]),
        helper.make_node("Gather", ["shape", "time"], ["tlen_i"], axis=0),
        helper.make_node("Cast", ["tlen_i"], ["tlen"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["tlen", "onef"], ["tm1"]),
        helper.make_node("Div", ["ss", "tm1"], ["var"]),
        helper.make_node("Add", ["var", "eps"], ["var_e"]),
        helper.make_node("Sqrt", ["var_e"], ["std"]),
        helper.make_node("Squeeze", ["mean", "time"], ["mean3"]),
        helper.make_node("Reshape", ["mean3", "flat"], ["mean_f"]),
        helper.make_node("Reshape", ["std", "flat"], ["std_f"]),
        helper.make_node("Concat", ["mean_f", "std_f"], ["stats"], axis=1),
        helper.make_node("MatMul", ["stats", "seg_t"], ["emb0"]),
        helper.make_node("Add", ["emb0", "resnet.seg_1.bias"], ["embedding"]),
    ]
    graph = helper.make_graph(
        nodes,
        "wespeaker_resnet34",
        [helper.make_tensor_value_info("fbank", TensorProto.FLOAT, ["B", "T", 80])],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["B", EMBED_DIM])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


@pytest.fixture(scope="module")
def weights():
    return random_state_dict()


@pytest.fixture(scope="module")
def speech():
    audio = saywho.load_audio(shared_file("two_speakers.wav"))
    return np.stack([audio[16000 * 8 : 16000 * 11], audio[16000 * 20 : 16000 * 23]])


def test_matches_onnxruntime_on_real_speech(weights, speech):
    import onnxruntime as ort

    session = ort.InferenceSession(onnx_graph(weights), providers=["CPUExecutionProvider"])
    features = np.stack([saywho.fbank(x) for x in speech])
    (theirs,) = session.run(None, {"fbank": features})
    with ResNetEmbedding(fold_state_dict(weights)) as model:
        ours = model.embed_features(features)
        assert np.allclose(model(speech), ours, atol=1e-5)
    scale = np.abs(theirs).max()
    assert np.abs(ours - theirs).max() <= 1e-3 * scale, np.abs(ours - theirs).max() / scale


def test_weighted_pooling_is_the_unbiased_weighted_variance():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 50, 4)).astype(np.float32)
    w = (rng.uniform(size=(2, 50)) > 0.4).astype(np.float32)
    stats = weighted_stats(x, w)
    for b in range(2):
        keep = x[b][:, w[b] > 0]  # [F, kept, C]
        mean = keep.mean(axis=1).T.reshape(-1)  # channel-major
        std = np.sqrt(keep.var(axis=1, ddof=1) + 1e-7).T.reshape(-1)
        np.testing.assert_allclose(stats[b], np.concatenate([mean, std]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weighted_stats(x, None), weighted_stats(x, np.ones((2, 50))))


def test_masks_restrict_the_pooling(weights, speech):
    with ResNetEmbedding(fold_state_dict(weights)) as model:
        full = model(speech)
        half = np.zeros((2, 589), np.float32)
        half[:, :300] = 1
        masked = model(speech, half)
        assert not np.allclose(full, masked, atol=1e-3)
        empty = model(speech, np.zeros((2, 589), np.float32))
        assert np.isnan(empty).all()


def test_checkpoint_loader_agrees(weights, tmp_path, fake_torch):  # noqa: F811
    writer = Writer(fake_torch)
    state = collections.OrderedDict(
        (k, Parameter(fake_torch, writer.tensor(v))) for k, v in weights.items()
    )
    writer.zip({"state_dict": state, "pyannote.audio": {"versions": {}}}, tmp_path / "m.bin")
    loaded = load_resnet(tmp_path / "m.bin")
    folded = fold_state_dict(weights)
    assert loaded.keys() == folded.keys()
    for k in folded:
        np.testing.assert_array_equal(loaded[k], folded[k])


def test_wrong_shapes_and_names_are_model_errors(weights):
    broken = dict(weights)
    del broken["resnet.layer3.2.bn1.running_var"]
    with pytest.raises(saywho.ModelError, match="layer3.2.bn1.running_var"):
        fold_state_dict(broken)
    broken = dict(weights)
    broken["resnet.seg_1.weight"] = broken["resnet.seg_1.weight"][:, :100]
    with pytest.raises(saywho.ModelError, match="seg_1.weight"):
        fold_state_dict(broken)
    assert sum(BLOCKS) == len(_layer_names())


def test_the_diarizer_takes_a_resnet_checkpoint(weights, tmp_path, fake_torch):  # noqa: F811
    """The ResNet behind the same interface: a pyannote-style checkpoint runs
    through the whole diarization (random weights: the speakers found mean
    nothing, the plumbing does), and its embeddings are the ResNet's."""
    from saywho.diarization import Diarizer
    from saywho.diarization.embedding_resnet import ResNetEmbedding

    from .weights import test_diarization_models

    writer = Writer(fake_torch)
    state = collections.OrderedDict(
        (k, Parameter(fake_torch, writer.tensor(v))) for k, v in weights.items()
    )
    writer.zip({"state_dict": state}, tmp_path / "pytorch_model.bin")
    seg, _ = test_diarization_models()
    audio = saywho.load_audio(shared_file("two_speakers.wav"))[: 16000 * 14]
    with Diarizer(seg, tmp_path / "pytorch_model.bin") as d:
        assert isinstance(d.embedding, ResNetEmbedding)
        result = d(audio, num_speakers=2)
    assert result.turns and result.embeddings.shape[1] == EMBED_DIM
    assert all(0.0 <= t.start < t.end <= 14.0 for t in result.turns)


def test_close_returns_every_byte(weights, speech):
    """The core model holds every weight once; close() and `with` give it all back."""
    from saywho import _core

    runtime = _core.Runtime(device="cpu", threads=2)
    try:
        before = runtime.memory()["allocated"]
        model = ResNetEmbedding(fold_state_dict(weights), runtime)
        held = runtime.memory()["allocated"]
        assert held - before >= 4 * 6_000_000  # ~6.6 M parameters, float32, on the backend
        model(speech[:, :16000])
        assert runtime.memory()["allocated"] == held  # a run leaves nothing behind
        model.close()
        model.close()  # idempotent
        assert runtime.memory()["allocated"] == before
        with pytest.raises(saywho.ModelError, match="closed"):
            model.embed_features(np.zeros((1, 50, 80), np.float32))
        with ResNetEmbedding(fold_state_dict(weights), runtime) as again:
            again(speech[:, :16000])
        assert runtime.memory()["allocated"] == before
    finally:
        runtime.close()


def test_core_model_names_missing_and_misshaped_tensors(weights):
    from saywho import _core

    runtime = _core.Runtime(device="cpu", threads=2)
    try:
        bad = fold_state_dict(weights)
        bad["layer3.4.conv2"] = bad["layer3.4.conv2"][:, :64]
        with pytest.raises(
            saywho.ModelError,
            match=r"'layer3\.4\.conv2' has shape \[128, 64, 3, 3\], expected \[128, 128, 3, 3\]",
        ):
            _core.ResNet34Model(runtime, bad)
        bad = fold_state_dict(weights)
        del bad["layer4.0.shortcut.b"]
        with pytest.raises(saywho.ModelError, match=r"missing tensor 'layer4\.0\.shortcut\.b'"):
            _core.ResNet34Model(runtime, bad)
        assert runtime.memory()["allocated"] == 0  # nothing left behind by the failures
        with _core.ResNet34Model(runtime, fold_state_dict(weights)) as model:
            for shape in ((1, 50, 40), (0, 50, 80), (1, 0, 80)):
                with pytest.raises(saywho.OptionError):
                    model.run(np.zeros(shape, np.float32))
            with pytest.raises(saywho.OptionError, match="masks"):
                model.run(np.zeros((2, 50, 80), np.float32), np.ones((1, 2, 50), np.float32))
    finally:
        runtime.close()


def test_speaker_masks_pool_one_forward(weights, speech):
    """embed_speakers runs the network once per chunk and pools per mask: the
    same as one call per (chunk, mask) with that mask alone."""
    rng = np.random.default_rng(2)
    masks = (rng.uniform(size=(2, 3, 147)) > 0.5).astype(np.float32)
    masks[1, 2] = 0
    short = speech[:, :24000]
    with ResNetEmbedding(fold_state_dict(weights), batch_size=2) as model:
        together = model.embed_speakers(short, masks)
        features = np.stack([saywho.fbank(x) for x in short])
        for j in range(3):
            alone = model.embed_features(features, masks[:, j])
            np.testing.assert_allclose(together[:, j], alone, rtol=1e-5, atol=1e-4)
    assert np.isnan(together[1, 2]).all() and not np.isnan(together[:, :2]).any()


@pytest.mark.parametrize("device", GPU_DEVICES)
def test_cuda_backend_matches_the_cpu(weights, speech, runtimes, device):
    """The same forward, masked pooling included, through the CUDA backend's
    kernels (on the CPU emulator, as CI runs them; on a GPU where one answers)."""
    features = np.stack([saywho.fbank(x[:8000]) for x in speech])  # short: the emulator is slow
    mask = np.ones((2, 1, 40), np.float32)
    mask[0, 0, 20:] = 0
    out = {}
    for name in ("cpu", device):
        with ResNetEmbedding(fold_state_dict(weights), runtimes[name]) as model:
            out[name] = model._run(features, mask)
    scale = np.abs(out["cpu"]).max()
    assert np.abs(out["cpu"] - out[device]).max() <= 1e-4 * scale
