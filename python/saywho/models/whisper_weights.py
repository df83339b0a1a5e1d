"""Whisper checkpoints, in any format we read, as OpenAI's state-dict names.

The C core builds a Whisper model from named arrays plus ``dims`` (OpenAI's
``ModelDimensions``). Every size, tiny to large-v3-turbo, is the same
layout at different dims, so the dims come from tensor shapes (and the
head counts from the checkpoint's own record of them), never from a table
of known sizes. Every tensor is then checked against the shape the dims
imply, so a wrong or partial checkpoint fails here, by name, not in the core.

Formats: CTranslate2 model directories (``model.bin``, as Systran's
faster-whisper repositories publish them) and Hugging Face ``openai/whisper-*``
safetensors directories.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .._internal.native import _core
from .ctranslate2 import CT2Model, read_ct2
from .safetensors import read_safetensors_dir

DIM_KEYS = (
    "n_mels",
    "n_audio_ctx",
    "n_audio_state",
    "n_audio_head",
    "n_audio_layer",
    "n_vocab",
    "n_text_ctx",
    "n_text_state",
    "n_text_head",
    "n_text_layer",
)

# Every released Whisper uses 64-wide attention heads; the fallback when a
# checkpoint does not record its head count.
HEAD_DIM = 64

# OpenAI's rule: the multilingual vocabulary has 51865 entries or more.
MULTILINGUAL_MIN_VOCAB = 51865


@dataclass
class WhisperWeights:
    dims: dict  # OpenAI's ModelDimensions, as a dict
    tensors: dict  # canonical name -> float32 or float16 array
    config: dict  # alignment_heads, lang_ids, suppress_ids, suppress_ids_begin
    is_multilingual: bool
    alignment_heads: list  # (decoder layer, head) pairs for word timestamps
    path: str
    format: str  # "ctranslate2" or "safetensors"


# ------------------------------------------------------------ canonical layout


def canonical_shapes(dims: dict) -> dict:
    """Every tensor a Whisper of these dims has, with its shape."""
    d, m, v = dims["n_audio_state"], dims["n_mels"], dims["n_vocab"]
    t = dims["n_text_state"]
    shapes = {
        "encoder.conv1.weight": (d, m, 3),
        "encoder.conv1.bias": (d,),
        "encoder.conv2.weight": (d, d, 3),
        "encoder.conv2.bias": (d,),
        "encoder.positional_embedding": (dims["n_audio_ctx"], d),
    }
    for i in range(dims["n_audio_layer"]):
        shapes.update(_block(f"encoder.blocks.{i}", d, cross=False))
    shapes.update({"encoder.ln_post.weight": (d,), "encoder.ln_post.bias": (d,)})
    shapes["decoder.token_embedding.weight"] = (v, t)
    shapes["decoder.positional_embedding"] = (dims["n_text_ctx"], t)
    for i in range(dims["n_text_layer"]):
        shapes.update(_block(f"decoder.blocks.{i}", t, cross=True))
    shapes.update({"decoder.ln.weight": (t,), "decoder.ln.bias": (t,)})
    return shapes


def _attention(prefix: str, d: int) -> dict:
    # OpenAI's key projection has no bias.
    shapes = {f"{prefix}.{p}.weight": (d, d) for p in ("query", "key", "value", "out")}
    shapes.update({f"{prefix}.{p}.bias": (d,) for p in ("query", "value", "out")})
    return shapes


def _block(prefix: str, d: int, cross: bool) -> dict:
    shapes = {f"{prefix}.attn_ln.weight": (d,), f"{prefix}.attn_ln.bias": (d,)}
    shapes.update(_attention(f"{prefix}.attn", d))
    if cross:
        shapes.update(
            {f"{prefix}.cross_attn_ln.weight": (d,), f"{prefix}.cross_attn_ln.bias": (d,)}
        )
        shapes.update(_attention(f"{prefix}.cross_attn", d))
    shapes.update({f"{prefix}.mlp_ln.weight": (d,), f"{prefix}.mlp_ln.bias": (d,)})
    shapes.update({f"{prefix}.mlp.0.weight": (4 * d, d), f"{prefix}.mlp.0.bias": (4 * d,)})
    shapes.update({f"{prefix}.mlp.2.weight": (d, 4 * d), f"{prefix}.mlp.2.bias": (d,)})
    return shapes


# ------------------------------------------------------------------ loading


@dataclass(frozen=True)
class CheckpointFiles:
    """Where a Whisper checkpoint's files are, found once: the folder (its
    config.json and tokenizer.json), the format, and the weights' file."""

    directory: str
    format: str  # "ctranslate2" or "safetensors"
    weights: str  # model.bin, or the folder for (sharded) safetensors

    @property
    def tokenizer(self) -> str:
        return os.path.join(self.directory, "tokenizer.json")

    @property
    def config(self) -> str:
        return os.path.join(self.directory, "config.json")


def locate_checkpoint(path: str | os.PathLike) -> CheckpointFiles:
    """A Whisper checkpoint directory (or its model.bin / model.safetensors)."""
    path = os.fspath(path)
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    if path.endswith(".bin") and not os.path.isdir(path):
        return CheckpointFiles(directory, "ctranslate2", path)
    if os.path.isfile(os.path.join(path, "model.bin")):
        return CheckpointFiles(directory, "ctranslate2", os.path.join(path, "model.bin"))
    if path.endswith(".safetensors") or any(
        os.path.isfile(os.path.join(directory, f))
        for f in ("model.safetensors", "model.safetensors.index.json")
    ):
        return CheckpointFiles(directory, "safetensors", directory)
    raise _core.ModelError(
        f"{path}: no Whisper checkpoint here: expected a CTranslate2 model.bin or a "
        "Hugging Face model.safetensors (with config.json)"
    )


def load_whisper(path: str | os.PathLike | CheckpointFiles) -> WhisperWeights:
    """A Whisper checkpoint directory (or its model.bin / model.safetensors,
    or the files locate_checkpoint found)."""
    files = path if isinstance(path, CheckpointFiles) else locate_checkpoint(path)
    if files.format == "ctranslate2":
        return _load_ct2(files)
    return _load_hf(files.directory)


def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise _core.ModelError(f"{path}: unreadable JSON: {e}") from None


def _finish(path, fmt, dims, tensors, config) -> WhisperWeights:
    want = canonical_shapes(dims)
    for name, shape in want.items():
        if name not in tensors:
            raise _core.ModelError(f"{path}: Whisper tensor '{name}' {list(shape)} is missing")
        if tuple(tensors[name].shape) != shape:
            raise _core.ModelError(
                f"{path}: Whisper tensor '{name}' has shape {list(tensors[name].shape)}, "
                f"expected {list(shape)} for dims {dims}"
            )
    heads = config.get("alignment_heads")
    if not heads:
        # CTranslate2's converter's default: every head of the last half of the decoder.
        n = dims["n_text_layer"]
        heads = [(i, h) for i in range(n // 2, n) for h in range(dims["n_text_head"])]
    heads = [(int(layer), int(head)) for layer, head in heads]
    for layer, head in heads:
        if not (0 <= layer < dims["n_text_layer"] and 0 <= head < dims["n_text_head"]):
            raise _core.ModelError(f"{path}: alignment head {(layer, head)} is outside {dims}")
    return WhisperWeights(
        dims=dims,
        tensors={k: tensors[k] for k in want},
        config=config,
        is_multilingual=dims["n_vocab"] >= MULTILINGUAL_MIN_VOCAB,
        alignment_heads=heads,
        path=path,
        format=fmt,
    )


def _heads(value, d: int) -> int:
    return int(value) if value is not None else d // HEAD_DIM


# -------------------------------------------------------------- CTranslate2


def _ct2_sources(dims: dict):
    """(canonical name, CTranslate2 variable, part, parts): part of a row-split fused variable."""
    yield "encoder.conv1.weight", "encoder/conv1/weight", 0, 1
    yield "encoder.conv1.bias", "encoder/conv1/bias", 0, 1
    yield "encoder.conv2.weight", "encoder/conv2/weight", 0, 1
    yield "encoder.conv2.bias", "encoder/conv2/bias", 0, 1
    yield "encoder.positional_embedding", "encoder/position_encodings/encodings", 0, 1
    for side, n in (("encoder", dims["n_audio_layer"]), ("decoder", dims["n_text_layer"])):
        for i in range(n):
            dst, src = f"{side}.blocks.{i}", f"{side}/layer_{i}"
            yield from _ln(f"{dst}.attn_ln", f"{src}/self_attention/layer_norm")
            # Self-attention Q, K, V fused as rows [q; k; v] of linear_0.
            for part, p in enumerate(("query", "key", "value")):
                yield f"{dst}.attn.{p}.weight", f"{src}/self_attention/linear_0/weight", part, 3
                if p != "key":
                    yield f"{dst}.attn.{p}.bias", f"{src}/self_attention/linear_0/bias", part, 3
            yield from _linear(f"{dst}.attn.out", f"{src}/self_attention/linear_1")
            if side == "decoder":
                yield from _ln(f"{dst}.cross_attn_ln", f"{src}/attention/layer_norm")
                yield from _linear(f"{dst}.cross_attn.query", f"{src}/attention/linear_0")
                # Cross-attention K, V fused as rows [k; v] of linear_1.
                yield f"{dst}.cross_attn.key.weight", f"{src}/attention/linear_1/weight", 0, 2
                yield f"{dst}.cross_attn.value.weight", f"{src}/attention/linear_1/weight", 1, 2
                yield f"{dst}.cross_attn.value.bias", f"{src}/attention/linear_1/bias", 1, 2
                yield from _linear(f"{dst}.cross_attn.out", f"{src}/attention/linear_2")
            yield from _ln(f"{dst}.mlp_ln", f"{src}/ffn/layer_norm")
            yield from _linear(f"{dst}.mlp.0", f"{src}/ffn/linear_0")
            yield from _linear(f"{dst}.mlp.2", f"{src}/ffn/linear_1")
    yield from _ln("encoder.ln_post", "encoder/layer_norm")
    yield "decoder.token_embedding.weight", "decoder/embeddings/weight", 0, 1
    yield "decoder.positional_embedding", "decoder/position_encodings/encodings", 0, 1
    yield from _ln("decoder.ln", "decoder/layer_norm")


def _ln(dst: str, src: str):
    yield f"{dst}.weight", f"{src}/gamma", 0, 1
    yield f"{dst}.bias", f"{src}/beta", 0, 1


def _linear(dst: str, src: str):
    yield f"{dst}.weight", f"{src}/weight", 0, 1
    yield f"{dst}.bias", f"{src}/bias", 0, 1


def _ct2_count(model: CT2Model, side: str) -> int:
    n = 0
    while f"{side}/layer_{n}/ffn/linear_0/weight" in model:
        n += 1
    return n


def _ct2_scalar(model: CT2Model, name: str):
    if name not in model:
        return None
    value = model.get(name)
    if value.size != 1 or value.dtype.kind not in "iu":
        raise _core.ModelError(
            f"{model.path}: '{name}' should be one integer, is {value.dtype} {list(value.shape)}"
        )
    return int(value.reshape(()))


def _ct2_dims(model: CT2Model) -> dict:
    for name in ("encoder/conv1/weight", "encoder/position_encodings/encodings"):
        if name not in model:
            raise _core.ModelError(
                f"{model.path}: CTranslate2 Whisper variable '{name}' is missing"
            )
    for name in ("decoder/embeddings/weight", "decoder/position_encodings/encodings"):
        if name not in model:
            raise _core.ModelError(
                f"{model.path}: CTranslate2 Whisper variable '{name}' is missing"
            )
    d, n_mels = model.get("encoder/conv1/weight").shape[:2]
    n_vocab, t = model.get("decoder/embeddings/weight").shape
    return {
        "n_mels": int(n_mels),
        "n_audio_ctx": int(model.get("encoder/position_encodings/encodings").shape[0]),
        "n_audio_state": int(d),
        # WhisperSpec records head counts as int16 scalars.
        "n_audio_head": _heads(_ct2_scalar(model, "encoder/num_heads"), d),
        "n_audio_layer": _ct2_count(model, "encoder"),
        "n_vocab": int(n_vocab),
        "n_text_ctx": int(model.get("decoder/position_encodings/encodings").shape[0]),
        "n_text_state": int(t),
        "n_text_head": _heads(_ct2_scalar(model, "decoder/num_heads"), t),
        "n_text_layer": _ct2_count(model, "decoder"),
    }


def _load_ct2(files: CheckpointFiles) -> WhisperWeights:
    model = read_ct2(files.weights)
    if model.spec not in ("WhisperSpec", ""):
        raise _core.ModelError(f"{model.path}: a CTranslate2 {model.spec} model, not WhisperSpec")
    dims = _ct2_dims(model)
    want = canonical_shapes(dims)
    full = {}  # CTranslate2 name -> float array, so fused variables dequantize once
    tensors = {}
    for name, src, part, parts in _ct2_sources(dims):
        shape = want[name]
        fused = (shape[0] * parts,) + shape[1:]
        if src not in full:
            if src not in model:
                raise _core.ModelError(
                    f"{model.path}: CTranslate2 variable '{src}' {list(fused)} "
                    f"(for Whisper tensor '{name}') is missing"
                )
            full[src] = model.dequantized(src)
        value = full[src]
        if tuple(value.shape) != fused:
            raise _core.ModelError(
                f"{model.path}: CTranslate2 variable '{src}' (for Whisper tensor '{name}') has "
                f"shape {list(value.shape)}, expected {list(fused)} for dims {dims}"
            )
        tensors[name] = value[part * shape[0] : (part + 1) * shape[0]] if parts > 1 else value
    _check_no_key_bias(model, dims, full)
    config = _read_json(files.config)
    return _finish(model.path, "ctranslate2", dims, tensors, config)


def _check_no_key_bias(model: CT2Model, dims: dict, full: dict) -> None:
    # The fused bias carries zeros where Whisper's key has no bias; anything
    # else would be silently dropped by the split above.
    for side, n, d in (
        ("encoder", dims["n_audio_layer"], dims["n_audio_state"]),
        ("decoder", dims["n_text_layer"], dims["n_text_state"]),
    ):
        for i in range(n):
            checks = [(f"{side}/layer_{i}/self_attention/linear_0/bias", slice(d, 2 * d))]
            if side == "decoder":
                checks.append((f"{side}/layer_{i}/attention/linear_1/bias", slice(0, d)))
            for name, key in checks:
                if np.any(full[name][key]):
                    raise _core.ModelError(
                        f"{model.path}: '{name}' has a nonzero key bias, which Whisper has not"
                    )


# ------------------------------------------------------------- Hugging Face

_HF_TOP = {
    "encoder.positional_embedding": "encoder.embed_positions.weight",
    "encoder.ln_post.weight": "encoder.layer_norm.weight",
    "encoder.ln_post.bias": "encoder.layer_norm.bias",
    "decoder.token_embedding.weight": "decoder.embed_tokens.weight",
    "decoder.positional_embedding": "decoder.embed_positions.weight",
    "decoder.ln.weight": "decoder.layer_norm.weight",
    "decoder.ln.bias": "decoder.layer_norm.bias",
}
_HF_BLOCK = {
    "attn_ln": "self_attn_layer_norm",
    "cross_attn_ln": "encoder_attn_layer_norm",
    "mlp_ln": "final_layer_norm",
    "mlp.0": "fc1",
    "mlp.2": "fc2",
}
_HF_ATTN = {"attn": "self_attn", "cross_attn": "encoder_attn"}
_HF_PROJ = {"query": "q_proj", "key": "k_proj", "value": "v_proj", "out": "out_proj"}


def hf_name(name: str) -> str:
    """The Hugging Face ``WhisperForConditionalGeneration`` name of a canonical tensor."""
    if name in _HF_TOP:
        return "model." + _HF_TOP[name]
    parts = name.split(".")
    if parts[1] != "blocks":
        return "model." + name  # the convolutions keep their names
    side, i, rest, leaf = parts[0], parts[2], parts[3:-1], parts[-1]
    sub = ".".join(rest)
    if sub in _HF_BLOCK:
        sub = _HF_BLOCK[sub]
    else:
        sub = f"{_HF_ATTN[rest[0]]}.{_HF_PROJ[rest[1]]}"
    return f"model.{side}.layers.{i}.{sub}.{leaf}"


def _load_hf(directory: str) -> WhisperWeights:
    raw = read_safetensors_dir(directory)
    # WhisperModel checkpoints lack the "model." prefix of WhisperForConditionalGeneration.
    tensors = {k if k.startswith("model.") else "model." + k: v for k, v in raw.items()}
    hf = _read_json(os.path.join(directory, "config.json"))
    gen = _read_json(os.path.join(directory, "generation_config.json"))

    def shape(canonical: str) -> tuple:
        name = hf_name(canonical)
        if name not in tensors:
            raise _core.ModelError(f"{directory}: Hugging Face Whisper tensor '{name}' is missing")
        return tensors[name].shape

    def count(side: str) -> int:
        n = 0
        while hf_name(f"{side}.blocks.{n}.mlp.0.weight") in tensors:
            n += 1
        return n

    d, n_mels = shape("encoder.conv1.weight")[:2]
    n_vocab, t = shape("decoder.token_embedding.weight")
    dims = {
        "n_mels": int(n_mels),
        "n_audio_ctx": int(shape("encoder.positional_embedding")[0]),
        "n_audio_state": int(d),
        "n_audio_head": _heads(hf.get("encoder_attention_heads"), d),
        "n_audio_layer": count("encoder"),
        "n_vocab": int(n_vocab),
        "n_text_ctx": int(shape("decoder.positional_embedding")[0]),
        "n_text_state": int(t),
        "n_text_head": _heads(hf.get("decoder_attention_heads"), t),
        "n_text_layer": count("decoder"),
    }
    canonical = {}
    for name in canonical_shapes(dims):
        src = hf_name(name)
        if src not in tensors:
            raise _core.ModelError(
                f"{directory}: Hugging Face tensor '{src}' (for Whisper tensor '{name}') is missing"
            )
        canonical[name] = tensors[src]
    # The same facts CTranslate2's converter writes into its config.json.
    config = {
        "alignment_heads": gen.get("alignment_heads"),
        "lang_ids": sorted(gen.get("lang_to_id", {}).values()),
        "suppress_ids": gen.get("suppress_tokens", hf.get("suppress_tokens")),
        "suppress_ids_begin": gen.get("begin_suppress_tokens", hf.get("begin_suppress_tokens")),
    }
    return _finish(directory, "safetensors", dims, canonical, config)
