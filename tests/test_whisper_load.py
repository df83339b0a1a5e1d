"""Loading Whisper weights into the core without a float32 copy.

The float16 checkpoint's arrays go to the core as they lie in the memory map
(odd addresses included). On the CPU the weight matrices stay there: the
products widen them block by block as they read them (backend_cpu.c's
matmul_half), so loading writes nothing for them; the rest is widened
straight into the backend's buffers (csrc/runtime/widen.c; every bit
pattern is checked in the C test test_widen). Here, on the real tiny.en and
base: the model built that way computes exactly what the model built from
float32 arrays computes (NumPy's float16 -> float32 is exact), encoder
output and logits equal bit for bit, float32 and int8 (whose quantization
reads the same widened rows). Equal outputs over every layer need equal
weights. The model holds the arrays it computes from until it is closed.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import saywho
from saywho import _core


def _checkpoint(name):
    from saywho.models.whisper_weights import load_whisper
    from saywho.whisper.tokenizer import Tokenizer

    from .weights import test_model_dir

    path = test_model_dir(name)
    weights = load_whisper(path)
    return weights, Tokenizer(path, multilingual=weights.is_multilingual)


def _prompt(tok, multilingual: bool) -> np.ndarray:
    ids = [tok.sot]
    if multilingual:
        ids += [tok.languages["en"], tok.transcribe]
    ids += [tok.no_timestamps] + tok.encode(" And so my fellow Americans")
    return np.array([ids], np.int32)


@pytest.mark.parametrize("compute", ["float32", "int8"])
@pytest.mark.parametrize("name", ["tiny.en", "base"])
def test_half_checkpoint_loads_bit_for_bit(name, compute, jfk_wav):
    weights, tok = _checkpoint(name)
    halves = weights.tensors
    assert {str(v.dtype) for v in halves.values()} == {"float16"}
    # the no-copy path must meet halves at odd addresses, as CTranslate2 lays them out
    assert any(not v.flags.aligned for v in halves.values())
    widened = {k: v.astype(np.float32) for k, v in halves.items()}
    samples = saywho.load_audio(str(jfk_wav))
    mel = saywho.log_mel_spectrogram(samples, n_mels=weights.dims["n_mels"], padding=480000)
    mel = np.ascontiguousarray(mel[:, :3000], dtype=np.float32)
    prompt = _prompt(tok, weights.is_multilingual)

    rt = _core.Runtime("cpu", threads=2)
    try:
        before = rt.memory()["allocated"]
        results = []
        for tensors in (halves, widened):
            with _core.WhisperModel(rt, weights.dims, tensors, compute_type=compute) as m:
                audio = m.encode(mel)
                with m.new_state(audio, 1) as state:
                    logits = state.decode(prompt)
                results.append((audio.numpy(), logits))
                audio.close()
            assert rt.memory()["allocated"] == before  # closing returned every byte
    finally:
        rt.close()
    (enc_half, logits_half), (enc_f32, logits_f32) = results
    assert np.isfinite(logits_half).all()
    np.testing.assert_array_equal(enc_half, enc_f32)
    np.testing.assert_array_equal(logits_half, logits_f32)


def test_cpu_model_computes_from_the_mapped_halves_and_lets_them_go(jfk_wav):
    weights, tok = _checkpoint("tiny.en")
    halves = weights.tensors
    matrix = halves["decoder.token_embedding.weight"]
    refs = sys.getrefcount(matrix)
    rt = _core.Runtime("cpu", threads=2)
    try:
        m = _core.WhisperModel(rt, weights.dims, halves)
        # every linear layer and the embedding: 2 bytes a weight, none copied
        matrices = sum(
            v.nbytes
            for k, v in halves.items()
            if v.ndim == 2 and (k.endswith(".weight") and "embedding" not in k or "token" in k)
        )
        assert m.mapped_bytes == matrices > 70_000_000
        assert rt.memory()["allocated"] < 0.1 * matrices
        assert sys.getrefcount(matrix) == refs + 1  # held while the model computes from it
        m.close()
        assert m.mapped_bytes == 0
        assert sys.getrefcount(matrix) == refs
        assert rt.memory()["allocated"] == 0
    finally:
        rt.close()
