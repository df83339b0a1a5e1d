"""Whisper weight readers on the real test weights and on files built here.

Peers: an independent struct-based parse of model.bin, CTranslate2's own
model writer (ctranslate2.specs) for every quantization it offers, and a
safetensors file written here under Hugging Face's names. Missing test
weights fail with the fetch command; they never skip.
"""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from ctranslate2.specs.whisper_spec import WhisperSpec

import saywho
from saywho.models.ctranslate2 import read_ct2
from saywho.models.safetensors import read_safetensors
from saywho.models.whisper_weights import DIM_KEYS, canonical_shapes, hf_name, load_whisper

from .weights import test_model_dir

TINY_EN = dict(
    n_mels=80, n_audio_ctx=1500, n_audio_state=384, n_audio_head=6, n_audio_layer=4,
    n_vocab=51864, n_text_ctx=448, n_text_state=384, n_text_head=6, n_text_layer=4,
)  # fmt: skip
BASE = dict(
    n_mels=80, n_audio_ctx=1500, n_audio_state=512, n_audio_head=8, n_audio_layer=6,
    n_vocab=51865, n_text_ctx=448, n_text_state=512, n_text_head=8, n_text_layer=6,
)  # fmt: skip


@pytest.fixture(scope="module", params=["tiny.en", "base"])
def real(request):
    return request.param, test_model_dir(request.param), load_whisper(test_model_dir(request.param))


@pytest.fixture(scope="module")
def tiny():
    return load_whisper(test_model_dir("tiny.en"))


# ------------------------------------------------- an independent model.bin parse


def parse_ct2(path) -> dict:
    """name -> array, the plain way (version >= 4 layout, whole file read)."""
    types = ["<f4", "i1", "<i2", "<i4", "<f2"]
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        out = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return out

    def text():
        nonlocal pos
        (n,) = take("H")
        pos += n
        return data[pos - n : pos - 1].decode()

    take("I"), text(), take("I")
    out = {}
    for _ in range(take("I")[0]):
        name = text()
        (rank,) = take("B")
        shape = take(f"{rank}I")
        type_id, nbytes = take("BI")
        out[name] = np.frombuffer(data, types[type_id], int(np.prod(shape)), pos).reshape(shape)
        pos += nbytes
    return out


def write_ct2(path, variables: dict, spec="WhisperSpec", version=6, aliases=None, bf16=()):
    """A model.bin in any binary version 1..6, for the reader's edge cases;
    names in ``bf16`` hold uint16 bit patterns written as bfloat16."""
    types = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4}

    def text(s):
        raw = s.encode() + b"\0"
        return struct.pack("<H", len(raw)) + raw

    out = [struct.pack("<I", version)]
    if version >= 2:
        out += [text(spec), struct.pack("<I", 3)]
    out.append(struct.pack("<I", len(variables)))
    for name, value in variables.items():
        value = np.asarray(value)  # not ascontiguousarray: it turns scalars into 1-d arrays
        out += [text(name), struct.pack(f"<B{value.ndim}I", value.ndim, *value.shape)]
        if version >= 4:
            type_id = 5 if name in bf16 else types[value.dtype.name]
            out.append(struct.pack("<BI", type_id, value.nbytes))
        else:
            out.append(struct.pack("<BI", value.itemsize, value.size))
        out.append(value.tobytes())
    if version >= 3:
        aliases = aliases or {}
        out.append(struct.pack("<I", len(aliases)))
        out += [text(a) + text(t) for a, t in aliases.items()]
    path.write_bytes(b"".join(out))


# ------------------------------------------------------------- the real weights


def test_dims_and_config_of_the_real_weights(real):
    name, path, w = real
    assert w.dims == (TINY_EN if name == "tiny.en" else BASE)
    assert tuple(w.dims) == DIM_KEYS
    assert w.is_multilingual == (name == "base")
    assert w.format == "ctranslate2"
    config = json.loads((path / "config.json").read_text())
    assert w.alignment_heads == [tuple(h) for h in config["alignment_heads"]]
    assert w.config["suppress_ids"] == config["suppress_ids"]
    assert set(w.tensors) == set(canonical_shapes(w.dims))
    assert {a.dtype for a in w.tensors.values()} == {np.dtype(np.float16)}
    print(f"{name}: {w.dims}, alignment heads {w.alignment_heads}")


def test_tensors_equal_an_independent_parse(real):
    _, path, w = real
    raw = parse_ct2(path / "model.bin")
    d = w.dims["n_audio_state"]
    T = w.tensors
    assert raw["encoder/num_heads"] == w.dims["n_audio_head"]
    assert raw["decoder/num_heads"] == w.dims["n_text_head"]
    for i in (0, w.dims["n_text_layer"] - 1):
        qkv = raw[f"decoder/layer_{i}/self_attention/linear_0/weight"]
        for part, p in enumerate(("query", "key", "value")):
            np.testing.assert_array_equal(
                T[f"decoder.blocks.{i}.attn.{p}.weight"], qkv[part * d : (part + 1) * d]
            )
        kv = raw[f"decoder/layer_{i}/attention/linear_1/bias"]
        np.testing.assert_array_equal(T[f"decoder.blocks.{i}.cross_attn.value.bias"], kv[d:])
        np.testing.assert_array_equal(
            T[f"decoder.blocks.{i}.mlp.2.weight"], raw[f"decoder/layer_{i}/ffn/linear_1/weight"]
        )
    np.testing.assert_array_equal(T["encoder.conv1.weight"], raw["encoder/conv1/weight"])
    np.testing.assert_array_equal(T["encoder.ln_post.bias"], raw["encoder/layer_norm/beta"])
    np.testing.assert_array_equal(
        T["decoder.token_embedding.weight"], raw["decoder/embeddings/weight"]
    )


def test_reader_maps_instead_of_copying(tiny):
    emb = tiny.tensors["decoder.token_embedding.weight"]
    assert not emb.flags.owndata and not emb.flags.writeable


def test_projection_alias_resolves(real):
    _, path, _ = real
    model = read_ct2(path / "model.bin")
    assert model.aliases == {"decoder/projection/weight": "decoder/embeddings/weight"}
    assert model.get("decoder/projection/weight") is model.get("decoder/embeddings/weight")


# --------------------------------------- CTranslate2's own writer, every dtype


def _ct2_spec(tensors: dict, dims: dict):
    """A WhisperSpec filled from canonical tensors, as CTranslate2's converter would."""
    spec = WhisperSpec(
        dims["n_audio_layer"], dims["n_audio_head"], dims["n_text_layer"], dims["n_text_head"]
    )
    # Copies: CTranslate2's optimize() quantizes the arrays it holds in place.
    T = {k: np.array(v, np.float32) for k, v in tensors.items()}

    def ln(s, name):
        s.gamma, s.beta = T[name + ".weight"], T[name + ".bias"]

    def lin(s, name, bias=True):
        s.weight = T[name + ".weight"]
        if bias:
            s.bias = T[name + ".bias"]

    def attention(s, name, cross):
        zero = np.zeros_like(T[name + ".query.bias"])
        q, k, v = (T[f"{name}.{p}.weight"] for p in ("query", "key", "value"))
        qb, vb = T[name + ".query.bias"], T[name + ".value.bias"]
        if cross:
            lin(s.linear[0], name + ".query")
            s.linear[1].weight, s.linear[1].bias = (
                np.concatenate([k, v]),
                np.concatenate([zero, vb]),
            )
        else:
            s.linear[0].weight = np.concatenate([q, k, v])
            s.linear[0].bias = np.concatenate([qb, zero, vb])
        lin(s.linear[-1], name + ".out")

    enc, dec = spec.encoder, spec.decoder
    lin(enc.conv1, "encoder.conv1")
    lin(enc.conv2, "encoder.conv2")
    enc.position_encodings.encodings = T["encoder.positional_embedding"]
    ln(enc.layer_norm, "encoder.ln_post")
    for side, layers in (("encoder", enc.layer), ("decoder", dec.layer)):
        for i, layer in enumerate(layers):
            b = f"{side}.blocks.{i}"
            ln(layer.self_attention.layer_norm, b + ".attn_ln")
            attention(layer.self_attention, b + ".attn", cross=False)
            if side == "decoder":
                ln(layer.attention.layer_norm, b + ".cross_attn_ln")
                attention(layer.attention, b + ".cross_attn", cross=True)
            ln(layer.ffn.layer_norm, b + ".mlp_ln")
            lin(layer.ffn.linear_0, b + ".mlp.0")
            lin(layer.ffn.linear_1, b + ".mlp.2")
    dec.embeddings.weight = T["decoder.token_embedding.weight"]
    dec.position_encodings.encodings = T["decoder.positional_embedding"]
    ln(dec.layer_norm, "decoder.ln")
    dec.projection.weight = T["decoder.token_embedding.weight"]
    spec.register_vocabulary([f"t{i}" for i in range(dims["n_vocab"])])
    return spec


def random_whisper(dims: dict, seed=0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        name: rng.standard_normal(shape).astype(np.float32)
        for name, shape in canonical_shapes(dims).items()
    }


# Small dims with the shape of real ones: turbo's 128 mels and 4 decoder
# layers under fewer encoder layers, and distinct sizes so a swapped dim shows.
SMALL = dict(
    n_mels=128, n_audio_ctx=10, n_audio_state=32, n_audio_head=2, n_audio_layer=3,
    n_vocab=51866, n_text_ctx=12, n_text_state=32, n_text_head=4, n_text_layer=4,
)  # fmt: skip


# bfloat16 is left out: CTranslate2 needs torch to write it (test_bfloat16_widens covers it).
@pytest.mark.parametrize("quantization", ["float32", "float16", "int8", "int16"])
def test_ctranslate2_written_models_read_back(tmp_path, quantization):
    want = random_whisper(SMALL)
    spec = _ct2_spec(want, SMALL)
    spec.validate()
    spec.optimize(quantization=quantization)
    spec.save(str(tmp_path))
    w = load_whisper(tmp_path)
    assert w.dims == SMALL and w.is_multilingual
    raw = read_ct2(tmp_path / "model.bin")
    assert (raw.binary_version, raw.spec) == (6, "WhisperSpec")
    for name, value in want.items():
        got = np.asarray(w.tensors[name], np.float32)
        if quantization == "float32":
            np.testing.assert_array_equal(got, value, err_msg=name)
        elif quantization == "float16":
            np.testing.assert_array_equal(got, value.astype(np.float16), err_msg=name)
        else:
            # Quantized weights: within half a step of the original, a step
            # being max|row| / 127 (int8) or max|w| / 1024 over the whole
            # (possibly fused) variable for int16, bounded here by the model's max.
            rows = value.reshape(value.shape[0], -1)
            if quantization == "int8":
                step = np.abs(rows).max(axis=1, keepdims=True) / 127
            else:
                step = max(np.abs(v).max() for v in want.values()) / 2**10
            err = np.abs(got.reshape(rows.shape) - rows)
            assert np.all(err <= step * 0.5 + 1e-6), name


def test_bfloat16_widens_to_float32(tmp_path):
    want = np.array([[1.0, -2.5, 3.140625], [0.0, 1e-3, -65504.0]], np.float32)
    bits = (want.view(np.uint32) >> 16).astype(np.uint16)
    write_ct2(tmp_path / "model.bin", {"w": bits}, bf16={"w"})
    got = read_ct2(tmp_path / "model.bin").get("w")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32) & 0xFFFF0000)


def test_int8_dequantization_is_int8_over_scale(tmp_path):
    w = np.array([[1.0, -0.5, 0.25], [0.0, 0.0, 0.0], [-2.0, 1.0, 0.5]], np.float32)
    q = np.array([[127, -64, 32], [0, 0, 0], [-127, 64, 32]], np.int8)
    scale = np.array([127.0, 1.0, 63.5], np.float32)  # 127 / max|row|; an all-zero row keeps 1
    write_ct2(tmp_path / "model.bin", {"x/weight": q, "x/weight_scale": scale})
    got = read_ct2(tmp_path / "model.bin").dequantized("x/weight")
    np.testing.assert_allclose(got, w, atol=0.5 / 63.5)
    np.testing.assert_array_equal(got, q / scale[:, None])


# ----------------------------------------------------- Hugging Face safetensors


def write_safetensors(path, tensors: dict, bf16=()):
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        value = np.ascontiguousarray(value)
        if name in bf16:  # keep the top half of each float32
            raw, dtype = (value.astype(np.float32).view(np.uint32) >> 16).astype("<u2"), "BF16"
        else:
            raw, dtype = value, {"float32": "F32", "float16": "F16"}[value.dtype.name]
        blob = raw.tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": list(value.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def test_hugging_face_round_trip(tmp_path, tiny):
    # CT2 -> canonical -> Hugging Face names -> safetensors -> canonical.
    hf = {hf_name(k): v for k, v in tiny.tensors.items()}
    hf["proj_out.weight"] = tiny.tensors["decoder.token_embedding.weight"]  # tied; ignored
    bf16 = {"model.encoder.conv1.bias"}
    write_safetensors(tmp_path / "model.safetensors", hf, bf16=bf16)
    d = tiny.dims
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "encoder_attention_heads": d["n_audio_head"],
                "decoder_attention_heads": d["n_text_head"],
            }
        )
    )
    (tmp_path / "generation_config.json").write_text(
        json.dumps({"alignment_heads": [[2, 0], [3, 1]], "suppress_tokens": [1, 2]})
    )
    w = load_whisper(tmp_path)
    assert w.format == "safetensors" and w.dims == tiny.dims
    assert w.alignment_heads == [(2, 0), (3, 1)] and w.config["suppress_ids"] == [1, 2]
    assert set(w.tensors) == set(tiny.tensors)
    for name, value in tiny.tensors.items():
        if hf_name(name) in bf16:
            want = value.astype(np.float32).view(np.uint32) & 0xFFFF0000
            np.testing.assert_array_equal(w.tensors[name].view(np.uint32), want)
        else:
            np.testing.assert_array_equal(w.tensors[name], value, err_msg=name)


def test_hugging_face_names():
    assert (
        hf_name("encoder.blocks.3.attn.query.weight")
        == "model.encoder.layers.3.self_attn.q_proj.weight"
    )
    assert (
        hf_name("decoder.blocks.0.cross_attn.out.bias")
        == "model.decoder.layers.0.encoder_attn.out_proj.bias"
    )
    assert (
        hf_name("decoder.blocks.1.cross_attn_ln.weight")
        == "model.decoder.layers.1.encoder_attn_layer_norm.weight"
    )
    assert hf_name("encoder.blocks.0.mlp.2.weight") == "model.encoder.layers.0.fc2.weight"
    assert hf_name("encoder.blocks.0.mlp_ln.bias") == "model.encoder.layers.0.final_layer_norm.bias"
    assert hf_name("encoder.positional_embedding") == "model.encoder.embed_positions.weight"
    assert hf_name("decoder.token_embedding.weight") == "model.decoder.embed_tokens.weight"
    assert hf_name("encoder.ln_post.weight") == "model.encoder.layer_norm.weight"
    assert hf_name("encoder.conv2.bias") == "model.encoder.conv2.bias"


def test_truncated_safetensors_names_the_file(tmp_path):
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"a": np.ones((4, 4), np.float32)})
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(saywho.ModelError, match=r"model\.safetensors.*truncated.*'a'"):
        read_safetensors(path)


# ------------------------------------------------------------ broken files


@pytest.fixture(scope="module")
def tiny_bin():
    return (test_model_dir("tiny.en") / "model.bin").read_bytes()


@pytest.mark.parametrize("keep", [0, 3, 9, 20, 150, 1_000_000, -1])
def test_truncated_model_bin_names_the_file(tmp_path, tiny_bin, keep):
    path = tmp_path / "model.bin"
    path.write_bytes(tiny_bin[:keep])
    with pytest.raises(saywho.ModelError, match=re.escape(str(path))) as e:
        load_whisper(tmp_path)
    assert "truncated" in str(e.value) or "cannot read" in str(e.value)


def test_unknown_version_and_garbage(tmp_path, tiny_bin):
    path = tmp_path / "model.bin"
    path.write_bytes(struct.pack("<I", 7) + tiny_bin[4:])
    with pytest.raises(saywho.ModelError, match="binary version 7 is not supported"):
        load_whisper(tmp_path)
    path.write_bytes(b"PK\x03\x04 this is a zip, not a model" * 10)
    with pytest.raises(saywho.ModelError, match=r"model\.bin"):
        load_whisper(tmp_path)
    path.write_bytes(tiny_bin + b"\0\0")
    with pytest.raises(saywho.ModelError, match="2 unexpected bytes"):
        load_whisper(tmp_path)


def test_wrong_spec_is_refused(tmp_path):
    write_ct2(tmp_path / "model.bin", {"x": np.zeros(2, np.float32)}, spec="TransformerSpec")
    with pytest.raises(saywho.ModelError, match="TransformerSpec model, not WhisperSpec"):
        load_whisper(tmp_path)


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_every_binary_version_reads(tmp_path, version):
    variables = {"a/weight": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.int16(5)}
    aliases = {"c/weight": "a/weight"} if version >= 3 else None
    write_ct2(tmp_path / "model.bin", variables, version=version, aliases=aliases)
    m = read_ct2(tmp_path / "model.bin")
    assert m.binary_version == version and m.spec == ("" if version == 1 else "WhisperSpec")
    np.testing.assert_array_equal(m.get("a/weight"), variables["a/weight"])
    assert m.get("b").dtype == np.int16 and int(m.get("b")) == 5
    if aliases:
        assert m.get("c/weight") is m.get("a/weight")


def test_missing_and_misshaped_tensors_are_named(tmp_path, tiny):
    raw = dict(parse_ct2(test_model_dir("tiny.en") / "model.bin"))
    gone = raw.pop("decoder/layer_2/ffn/linear_0/bias")
    write_ct2(tmp_path / "model.bin", raw)
    with pytest.raises(saywho.ModelError, match=r"'decoder/layer_2/ffn/linear_0/bias' \[1536\]"):
        load_whisper(tmp_path)
    raw["decoder/layer_2/ffn/linear_0/bias"] = gone[:-1]
    write_ct2(tmp_path / "model.bin", raw)
    with pytest.raises(saywho.ModelError, match=r"linear_0/bias.*\[1535\], expected \[1536\]"):
        load_whisper(tmp_path)


def test_missing_hf_tensor_is_named(tmp_path, tiny):
    hf = {hf_name(k): v for k, v in tiny.tensors.items()}
    del hf["model.decoder.layers.1.encoder_attn.k_proj.weight"]
    write_safetensors(tmp_path / "model.safetensors", hf)
    with pytest.raises(saywho.ModelError, match=r"encoder_attn\.k_proj\.weight.*cross_attn\.key"):
        load_whisper(tmp_path)


def test_missing_int8_scale_is_named(tmp_path):
    write_ct2(tmp_path / "model.bin", {"x/weight": np.ones((2, 2), np.int8)})
    with pytest.raises(saywho.ModelError, match="'x/weight_scale'"):
        read_ct2(tmp_path / "model.bin").dequantized("x/weight")


def test_no_checkpoint_here(tmp_path):
    with pytest.raises(saywho.ModelError, match="no Whisper checkpoint here"):
        load_whisper(tmp_path)


def test_missing_test_weights_say_how_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("SAYWHO_TEST_WEIGHTS", str(tmp_path))
    with pytest.raises(saywho.ModelError, match="run bash scripts/fetch_test_weights.sh"):
        test_model_dir("tiny.en")
