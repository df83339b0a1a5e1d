"""Random-weight Whisper checkpoints with the exact shapes of the sizes users
run (large-v3, large-v3-turbo, medium, small; tiny and base for the host
CPU rows where the real weights did not travel), for timing engines on a
machine that cannot download them (the lent GPU machines have no network,
and a few tens of MB travel to them: the multi-GB files are made there).

Each shape is written twice, with the same values, in the two formats the
engines read:

    OUT/hf/    model.safetensors, config.json, generation_config.json,
               preprocessor_config.json, tokenizer.json
               (Hugging Face transformers' WhisperForConditionalGeneration
               and saywho read it)
    OUT/ct2/   model.bin, config.json, preprocessor_config.json, tokenizer.json,
               vocabulary.txt (CTranslate2 / faster-whisper and saywho read it)

The dims are the ones OpenAI's Whisper publishes for each size. The values
mean nothing: float16 of random sign and mantissa, each tensor's exponent
chosen so that a product over its fan-in keeps unit scale (layer norms are
ones and zeros), so every engine computes finite logits and none takes a
short cut on zeros. Every tensor is seeded by its name, so the two formats
hold the same numbers and a run is reproducible. The tokenizer is the test
weights' multilingual one (base; only its three small files are needed); for a 51866-token vocabulary (large-v3,
turbo) <|yue|> is put at 50358 and the later special tokens move up one, as
in large-v3's own tokenizer.

Written streaming, in slices of 32 M values, into a ``.part`` file renamed
when whole, so memory stays flat and an interrupted run never looks done;
a folder already complete for the same shape and seed is left as it is.

    python3 bench/make_shape_checkpoint.py large-v3-turbo OUT [--seed 0] [--formats hf ct2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import time
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# OpenAI's ModelDimensions for each released size (whisper/__init__.py's
# checkpoints, as their dims read); "test" is a small custom shape that makes
# in a second, for the tests and the CPU dry run.
# fmt: off
SHAPES = {
    "large-v3": dict(n_mels=128, n_state=1280, n_head=20, n_audio_layer=32, n_text_layer=32, n_vocab=51866),
    "large-v3-turbo": dict(n_mels=128, n_state=1280, n_head=20, n_audio_layer=32, n_text_layer=4, n_vocab=51866),
    "medium": dict(n_mels=80, n_state=1024, n_head=16, n_audio_layer=24, n_text_layer=24, n_vocab=51865),
    "base": dict(n_mels=80, n_state=512, n_head=8, n_audio_layer=6, n_text_layer=6, n_vocab=51865),
    "tiny": dict(n_mels=80, n_state=384, n_head=6, n_audio_layer=4, n_text_layer=4, n_vocab=51865),
    "small": dict(n_mels=80, n_state=768, n_head=12, n_audio_layer=12, n_text_layer=12, n_vocab=51865),
    "test": dict(n_mels=80, n_state=128, n_head=2, n_audio_layer=2, n_text_layer=2, n_vocab=51865),
}
# fmt: on
N_AUDIO_CTX, N_TEXT_CTX = 1500, 448
YUE_ID = 50358  # where large-v3 put its 100th language
SLICE = 1 << 25  # values generated and written at a time
FORMATS = ("hf", "ct2")


def dims_of(shape: str) -> dict:
    """OpenAI's ModelDimensions of a shape name ("large-v3" or "large-v3-shape")."""
    name = shape.removesuffix("-shape")
    if name not in SHAPES:
        raise SystemExit(f"unknown shape {shape!r}: one of {', '.join(SHAPES)}")
    s = SHAPES[name]
    return {
        "n_mels": s["n_mels"],
        "n_audio_ctx": N_AUDIO_CTX,
        "n_audio_state": s["n_state"],
        "n_audio_head": s["n_head"],
        "n_audio_layer": s["n_audio_layer"],
        "n_vocab": s["n_vocab"],
        "n_text_ctx": N_TEXT_CTX,
        "n_text_state": s["n_state"],
        "n_text_head": s["n_head"],
        "n_text_layer": s["n_text_layer"],
    }


# ---------------------------------------------------------------- the values


def _exponent(name: str, shape: tuple) -> int | None:
    """The base-2 exponent of a tensor's magnitudes, or None for a constant
    (layer norms: gain one, bias zero)."""
    if "ln" in name.split(".")[-2]:
        return None
    if name.endswith(".bias") or name.endswith("positional_embedding"):
        return -7  # ~0.01: a nudge, not the signal
    fan_in = int(np.prod(shape[1:]))  # [out, in] and conv's [out, in, width]
    return int(np.floor(np.log2(1.0 / np.sqrt(fan_in))))


def tensor_slices(name: str, shape: tuple, seed: int):
    """A tensor's float16 values as little-endian uint16 arrays, SLICE at a
    time; the same name and seed give the same values in either format."""
    count = int(np.prod(shape))
    exp = _exponent(name, shape)
    if exp is None:
        one = 0x3C00 if name.endswith(".weight") else 0
        for start in range(0, count, SLICE):
            yield np.full(min(SLICE, count - start), one, np.uint16)
        return
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    high = np.uint16((exp + 15) << 10)  # the half's biased exponent field
    for start in range(0, count, SLICE):
        n = min(SLICE, count - start)
        # the generator's raw 64-bit words, cut in four: 3x faster than rng.bytes
        bits = rng.bit_generator.random_raw((n + 3) // 4).view(np.uint16)[:n]
        bits &= np.uint16(0x83FF)  # keep the sign and the mantissa
        bits |= high
        yield bits


def _write_tensor(f, name: str, shape: tuple, seed: int) -> None:
    for bits in tensor_slices(name, shape, seed):
        f.write(memoryview(bits.astype("<u2", copy=False)))


# ----------------------------------------------------------- the vocabulary


TEMPLATE_FILES = ("tokenizer.json", "config.json", "vocabulary.txt")


def _template_dir() -> Path:
    """The test weights' Whisper base folder: only its tokenizer and token
    lists are read, so a machine given those three small files without the
    weights (scripts/gpu_carry.sh) makes checkpoints too."""
    from checkout_weights import weights_root

    path = weights_root() / "whisper-base"
    missing = [f for f in TEMPLATE_FILES if not (path / f).is_file()]
    if missing:
        raise SystemExit(
            f"{path}: {', '.join(missing)} missing: the tokenizer template comes from the test "
            "weights (bash scripts/fetch_test_weights.sh, or SAYWHO_TEST_WEIGHTS)"
        )
    return path


def _new_id(i: int, n_vocab: int) -> int:
    return i + 1 if n_vocab == 51866 and i >= YUE_ID else i


def write_tokenizer(out: Path, n_vocab: int) -> dict:
    """tokenizer.json and vocabulary.txt for the vocabulary size, and the
    CT2 config's token lists (its suppress ids and language ids)."""
    src = _template_dir()
    tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    vocabulary = (src / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    if vocabulary[-1] == "":
        vocabulary.pop()
    if len(vocabulary) not in (n_vocab, n_vocab - 1):
        raise SystemExit(f"{src}: {len(vocabulary)} tokens cannot make a {n_vocab} vocabulary")
    if len(vocabulary) == n_vocab - 1:  # 51865 -> 51866: large-v3's <|yue|>
        vocabulary.insert(YUE_ID, "<|yue|>")
        for t in tok["added_tokens"]:
            t["id"] = _new_id(t["id"], n_vocab)
        yue = dict(tok["added_tokens"][0], id=YUE_ID, content="<|yue|>")
        tok["added_tokens"] = sorted(tok["added_tokens"] + [yue], key=lambda t: t["id"])
        config["lang_ids"] = sorted(config["lang_ids"] + [YUE_ID])
        for key in ("suppress_ids", "suppress_ids_begin"):
            config[key] = [_new_id(i, n_vocab) for i in config[key]]
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    (out / "vocabulary.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return config


# ------------------------------------------------------------ Hugging Face


def _hf_configs(dims: dict, tokens: dict, vocabulary: list) -> tuple[dict, dict, dict]:
    """config.json, generation_config.json and preprocessor_config.json (the
    last alone needs no vocabulary)."""
    features = {
        "feature_extractor_type": "WhisperFeatureExtractor",
        "processor_class": "WhisperProcessor",
        "feature_size": dims["n_mels"],
        "sampling_rate": 16000,
        "hop_length": 160,
        "n_fft": 400,
        "chunk_length": 30,
        "n_samples": 480000,
        "nb_max_frames": 3000,
        "padding_side": "right",
        "padding_value": 0.0,
        "return_attention_mask": False,
    }
    if not vocabulary:
        return {}, {}, features
    ids = {t: i for i, t in enumerate(vocabulary)}
    d = dims["n_text_state"]
    config = {
        "architectures": ["WhisperForConditionalGeneration"],
        "model_type": "whisper",
        "vocab_size": dims["n_vocab"],
        "num_mel_bins": dims["n_mels"],
        "d_model": d,
        "encoder_layers": dims["n_audio_layer"],
        "encoder_attention_heads": dims["n_audio_head"],
        "encoder_ffn_dim": 4 * d,
        "decoder_layers": dims["n_text_layer"],
        "decoder_attention_heads": dims["n_text_head"],
        "decoder_ffn_dim": 4 * d,
        "num_hidden_layers": dims["n_audio_layer"],
        "max_source_positions": dims["n_audio_ctx"],
        "max_target_positions": dims["n_text_ctx"],
        "activation_function": "gelu",
        "scale_embedding": False,
        "tie_word_embeddings": True,
        "use_cache": True,
        "dropout": 0.0,
        "attention_dropout": 0.0,
        "activation_dropout": 0.0,
        "pad_token_id": ids["<|endoftext|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|endoftext|>"],
        "decoder_start_token_id": ids["<|startoftranscript|>"],
        "suppress_tokens": tokens["suppress_ids"],
        "begin_suppress_tokens": tokens["suppress_ids_begin"],
        "torch_dtype": "float16",
    }
    languages = {t: i for t, i in ids.items() if i in set(tokens["lang_ids"])}
    generation = {
        "decoder_start_token_id": ids["<|startoftranscript|>"],
        "eos_token_id": ids["<|endoftext|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "max_length": dims["n_text_ctx"],
        "is_multilingual": True,
        "lang_to_id": languages,
        "task_to_id": {"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        "no_timestamps_token_id": ids["<|notimestamps|>"],
        "prev_sot_token_id": ids["<|startofprev|>"],
        "max_initial_timestamp_index": 50,
        "suppress_tokens": tokens["suppress_ids"],
        "begin_suppress_tokens": tokens["suppress_ids_begin"],
        "alignment_heads": tokens["alignment_heads"],
        "forced_decoder_ids": None,
    }
    return config, generation, features


def write_hf(out: Path, dims: dict, seed: int) -> None:
    from saywho.models.whisper_weights import canonical_shapes, hf_name

    shapes = canonical_shapes(dims)
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(np.prod(shape))
        header[hf_name(name)] = {
            "dtype": "F16",
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    header["__metadata__"] = {"format": "pt", "saywho": f"random weights, seed {seed}"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the data starts 8-byte aligned
    part = out / "model.safetensors.part"
    with open(part, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for name, shape in shapes.items():
            _write_tensor(f, name, shape, seed)
    os.replace(part, out / "model.safetensors")


# ------------------------------------------------------------- CTranslate2

_CT2_TYPES = {"i1": 1, "<i2": 2, "<f2": 4}


def _ct2_string(s: str) -> bytes:
    raw = s.encode() + b"\0"
    return struct.pack("<H", len(raw)) + raw


def _ct2_variables(dims: dict) -> list:
    """(CT2 name, shape, parts): parts are (canonical name or None for zeros,
    shape), stacked along the first axis; scalars carry (dtype, value)."""
    from saywho.models.whisper_weights import _ct2_sources, canonical_shapes

    shapes = canonical_shapes(dims)
    fused: dict[str, list] = {}
    for name, src, part, parts in _ct2_sources(dims):
        fused.setdefault(src, [None] * parts)[part] = name
    variables = []
    for src, names in fused.items():
        # the one part that is absent is Whisper's missing key bias: zeros
        known = next(n for n in names if n is not None)
        parts = [(n, shapes[n] if n else shapes[known]) for n in names]
        rows = sum(s[0] for _, s in parts)
        variables.append((src, (rows,) + shapes[known][1:], parts))
    for side, heads in (("encoder", dims["n_audio_head"]), ("decoder", dims["n_text_head"])):
        variables.append((f"{side}/num_heads", (), ("<i2", heads)))
    # the decoder's flags as CTranslate2's converter writes them for Whisper
    for flag, dtype, value in (
        ("activation", "i1", 3),  # GELU
        ("alibi", "i1", 0),
        ("alignment_heads", "<i2", 1),
        ("alignment_layer", "<i2", -1),
        ("pre_norm", "i1", 1),
        ("scale_embeddings", "i1", 0),
        ("start_from_zero_embedding", "i1", 0),
    ):
        variables.append((f"decoder/{flag}", (), (dtype, value)))
    return sorted(variables)  # CTranslate2 writes its variables sorted by name


def write_ct2(out: Path, dims: dict, seed: int) -> None:
    part = out / "model.bin.part"
    with open(part, "wb") as f:
        f.write(struct.pack("<I", 6) + _ct2_string("WhisperSpec") + struct.pack("<I", 3))
        variables = _ct2_variables(dims)
        f.write(struct.pack("<I", len(variables)))
        for name, shape, parts in variables:
            f.write(_ct2_string(name) + struct.pack("<B", len(shape)))
            f.write(struct.pack(f"<{len(shape)}I", *shape))
            if not shape:
                dtype, value = parts
                data = np.array(value, dtype).tobytes()
                f.write(struct.pack("<BI", _CT2_TYPES[dtype], len(data)) + data)
                continue
            f.write(struct.pack("<BI", _CT2_TYPES["<f2"], 2 * int(np.prod(shape))))
            for canonical, part_shape in parts:
                if canonical is None:
                    f.write(bytes(2 * int(np.prod(part_shape))))
                else:
                    _write_tensor(f, canonical, part_shape, seed)
        f.write(struct.pack("<I", 1))  # the output layer is the token embedding
        f.write(_ct2_string("decoder/projection/weight") + _ct2_string("decoder/embeddings/weight"))
    os.replace(part, out / "model.bin")


# ------------------------------------------------------------------- both


def make_checkpoint(shape: str, out: str | os.PathLike, seed: int = 0, formats=FORMATS) -> Path:
    """Writes (or finds complete) OUT/hf and OUT/ct2 for the shape; returns OUT."""
    dims = dims_of(shape)
    out = Path(out)
    for fmt in formats:
        folder = out / fmt
        stamp = folder / f".complete-{shape.removesuffix('-shape')}-seed{seed}"
        if stamp.exists():
            continue
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        tokens = write_tokenizer(folder, dims["n_vocab"])
        n = dims["n_text_layer"]  # no real alignment heads: the last half's, as CT2's default
        tokens["alignment_heads"] = [
            [i, h] for i in range(n // 2, n) for h in range(dims["n_text_head"])
        ]
        if fmt == "hf":
            vocabulary = (folder / "vocabulary.txt").read_text(encoding="utf-8").splitlines()
            os.remove(folder / "vocabulary.txt")
            for fname, content in zip(
                ("config.json", "generation_config.json", "preprocessor_config.json"),
                _hf_configs(dims, tokens, vocabulary),
            ):
                (folder / fname).write_text(json.dumps(content, indent=1), encoding="utf-8")
            write_hf(folder, dims, seed)
        else:
            (folder / "config.json").write_text(json.dumps(tokens, indent=1), encoding="utf-8")
            # faster-whisper takes its mel count from here (80 without it)
            features = _hf_configs(dims, tokens, [])[2]
            text = json.dumps(features, indent=1)
            (folder / "preprocessor_config.json").write_text(text, encoding="utf-8")
            write_ct2(folder, dims, seed)
        stamp.touch()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("shape", choices=sorted(SHAPES) + [f"{s}-shape" for s in SHAPES])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    args = ap.parse_args()
    t0 = time.perf_counter()
    out = make_checkpoint(args.shape, args.out, args.seed, args.formats)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {args.shape}, {size / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
