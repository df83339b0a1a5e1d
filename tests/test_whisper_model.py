"""The Whisper network of the C core (csrc/whisper) through _core.WhisperModel.

Two kinds of checks:

- a small random model against a NumPy transcription of OpenAI's forward
  (encoder, decoder with KV cache, beams over a batch, reordering), plus the
  error and memory contracts; these need no weights;
- the real tiny.en weights against CTranslate2 on the same weights: encoder
  output within a stated tolerance and greedy decoding token for token.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from math import erf

import numpy as np
import pytest

import saywho
from saywho import _core

# ---------------------------------------------------------------- reference

_erf = np.vectorize(erf)


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _ln(x, w, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-5) * w + b


def _attn(T, p, x, kv, heads, causal):
    q = x @ T[p + ".query.weight"].T + T[p + ".query.bias"]
    k = kv @ T[p + ".key.weight"].T
    v = kv @ T[p + ".value.weight"].T + T[p + ".value.bias"]
    tq, d = q.shape
    dh = d // heads
    out = np.zeros_like(q)
    for h in range(heads):
        sl = slice(h * dh, (h + 1) * dh)
        s = q[:, sl] @ k[:, sl].T / np.sqrt(dh)
        if causal:
            s = s + np.triu(np.full((tq, k.shape[0]), -np.inf), 1)
        e = np.exp(s - s.max(-1, keepdims=True))
        out[:, sl] = (e / e.sum(-1, keepdims=True)) @ v[:, sl]
    return out @ T[p + ".out.weight"].T + T[p + ".out.bias"]


def _mlp(T, p, x):
    h = _ln(x, T[p + ".mlp_ln.weight"], T[p + ".mlp_ln.bias"])
    h = _gelu(h @ T[p + ".mlp.0.weight"].T + T[p + ".mlp.0.bias"])
    return x + h @ T[p + ".mlp.2.weight"].T + T[p + ".mlp.2.bias"]


def _conv(x, w, b, stride):  # x [C_in, T], w [C_out, C_in, 3], pad 1
    xp = np.pad(x, ((0, 0), (1, 1)))
    t_out = (x.shape[1] + 2 - 3) // stride + 1
    cols = np.stack([xp[:, k : k + stride * t_out : stride] for k in range(3)], -1)
    return np.einsum("ctk,ock->ot", cols, w) + b[:, None]


def ref_encode(dims, T, mel):  # mel [n_mels, frames] -> [ctx, d]
    T = {k: v.astype(np.float64) for k, v in T.items()}
    x = _gelu(_conv(mel.astype(np.float64), T["encoder.conv1.weight"], T["encoder.conv1.bias"], 1))
    x = _gelu(_conv(x, T["encoder.conv2.weight"], T["encoder.conv2.bias"], 2)).T
    x = x + T["encoder.positional_embedding"]
    for i in range(dims["n_audio_layer"]):
        p = f"encoder.blocks.{i}"
        h = _ln(x, T[p + ".attn_ln.weight"], T[p + ".attn_ln.bias"])
        x = x + _attn(T, p + ".attn", h, h, dims["n_audio_head"], False)
        x = _mlp(T, p, x)
    return _ln(x, T["encoder.ln_post.weight"], T["encoder.ln_post.bias"])


def ref_logits(dims, T, audio, tokens):  # logits of the last of `tokens`
    T = {k: v.astype(np.float64) for k, v in T.items()}
    x = (
        T["decoder.token_embedding.weight"][tokens]
        + T["decoder.positional_embedding"][: len(tokens)]
    )
    for i in range(dims["n_text_layer"]):
        p = f"decoder.blocks.{i}"
        h = _ln(x, T[p + ".attn_ln.weight"], T[p + ".attn_ln.bias"])
        x = x + _attn(T, p + ".attn", h, h, dims["n_text_head"], True)
        h = _ln(x, T[p + ".cross_attn_ln.weight"], T[p + ".cross_attn_ln.bias"])
        x = x + _attn(T, p + ".cross_attn", h, audio, dims["n_text_head"], False)
        x = _mlp(T, p, x)
    x = _ln(x, T["decoder.ln.weight"], T["decoder.ln.bias"])
    return x[-1] @ T["decoder.token_embedding.weight"].T


DIMS = dict(
    n_mels=8,
    n_audio_ctx=10,
    n_audio_state=16,
    n_audio_head=2,
    n_audio_layer=2,
    n_vocab=50,
    n_text_ctx=12,
    n_text_state=16,
    n_text_head=2,
    n_text_layer=2,
)


def random_weights(dims=DIMS, seed=0):
    rng = np.random.default_rng(seed)
    d, m = dims["n_audio_state"], dims["n_mels"]

    def r(*shape, s=0.3):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    T = {
        "encoder.conv1.weight": r(d, m, 3),
        "encoder.conv1.bias": r(d),
        "encoder.conv2.weight": r(d, d, 3),
        "encoder.conv2.bias": r(d),
        "encoder.positional_embedding": r(dims["n_audio_ctx"], d),
        "encoder.ln_post.weight": 1 + r(d),
        "encoder.ln_post.bias": r(d),
        "decoder.token_embedding.weight": r(dims["n_vocab"], d),
        "decoder.positional_embedding": r(dims["n_text_ctx"], d),
        "decoder.ln.weight": 1 + r(d),
        "decoder.ln.bias": r(d),
    }

    def attn(p):
        for n in ("query", "key", "value", "out"):
            T[f"{p}.{n}.weight"] = r(d, d)
            if n != "key":
                T[f"{p}.{n}.bias"] = r(d)

    def block(p, cross):
        names = ["attn_ln", "mlp_ln"] + (["cross_attn_ln"] if cross else [])
        for ln in names:
            T[f"{p}.{ln}.weight"] = 1 + r(d)
            T[f"{p}.{ln}.bias"] = r(d)
        attn(p + ".attn")
        if cross:
            attn(p + ".cross_attn")
        T[p + ".mlp.0.weight"], T[p + ".mlp.0.bias"] = r(4 * d, d), r(4 * d)
        T[p + ".mlp.2.weight"], T[p + ".mlp.2.bias"] = r(d, 4 * d), r(d)

    for i in range(dims["n_audio_layer"]):
        block(f"encoder.blocks.{i}", False)
    for i in range(dims["n_text_layer"]):
        block(f"decoder.blocks.{i}", True)
    return T


@pytest.fixture
def runtime():
    rt = _core.Runtime("cpu", threads=2)
    yield rt
    rt.close()


def random_mel(batch, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, DIMS["n_mels"], 2 * DIMS["n_audio_ctx"])).astype(np.float32)


# ----------------------------------------------------- small random model


def test_encoder_matches_reference(runtime):
    T = random_weights()
    mel = random_mel(2)
    with _core.WhisperModel(runtime, DIMS, T) as m:
        out = m.encode(mel).numpy()
        assert out.shape == (2, DIMS["n_audio_ctx"], DIMS["n_audio_state"])
        for b in range(2):
            np.testing.assert_allclose(out[b], ref_encode(DIMS, T, mel[b]), atol=2e-4)
        single = m.encoder_output_numpy(m.encode(mel[1]))
        np.testing.assert_allclose(single[0], out[1], atol=1e-5)


def test_decoder_cache_matches_full_forward(runtime):
    T = random_weights()
    mel = random_mel(1)
    with _core.WhisperModel(runtime, DIMS, T) as m:
        enc = m.encode(mel)
        audio = enc.numpy()[0].astype(np.float64)
        st = m.new_state(enc, 1)
        seq = [3, 7, 11]
        got = st.decode(np.array([seq], np.int32))
        np.testing.assert_allclose(got[0], ref_logits(DIMS, T, audio, seq), atol=2e-4)
        for tok in (5, 42, 0):  # one token at a time through the cache
            seq.append(tok)
            got = st.decode(np.array([[tok]], np.int32))
            np.testing.assert_allclose(got[0], ref_logits(DIMS, T, audio, seq), atol=2e-4)
        assert st.length == len(seq)
        # several tokens at once after a cached prefix
        got = st.decode(np.array([[1, 2]], np.int32))
        np.testing.assert_allclose(got[0], ref_logits(DIMS, T, audio, seq + [1, 2]), atol=2e-4)


def test_beams_over_a_batch_and_reorder(runtime):
    T = random_weights()
    mel = random_mel(2, seed=5)
    with _core.WhisperModel(runtime, DIMS, T) as m:
        enc = m.encode(mel)
        audio = enc.numpy().astype(np.float64)
        st = m.new_state(enc, 4)  # 2 beams per audio: sequences 0,1 -> audio 0; 2,3 -> audio 1
        hist = [[1, 2], [1, 4], [3, 2], [3, 9]]
        st.decode(np.array(hist, np.int32))
        # beam search keeps sequence 1 twice for audio 0, and swaps audio 1's
        order = [1, 1, 3, 2]
        st.reorder(order)
        hist = [list(hist[i]) for i in order]
        step = [[6], [8], [10], [12]]
        got = st.decode(np.array(step, np.int32))
        for s in range(4):
            hist[s] += step[s]
            want = ref_logits(DIMS, T, audio[s // 2], hist[s])
            np.testing.assert_allclose(got[s], want, atol=3e-4)


def test_a_prompt_fed_once_and_copied_to_the_beams(runtime):
    """copy_from: the beams continue a one-row state's cache, as if each had
    been fed the prompt itself; its misuse is an error, not a crash."""
    T = random_weights()
    mel = random_mel(1, seed=7)
    with _core.WhisperModel(runtime, DIMS, T) as m:
        enc = m.encode(mel)
        audio = enc.numpy()[0].astype(np.float64)
        one = m.new_state(enc, 1)
        one.decode(np.array([[1, 2, 3]], np.int32))
        beams = m.new_state(enc, 3)
        beams.copy_from(one, [0, 0, 0])
        assert beams.length == 3
        got = beams.decode(np.array([[4], [5], [6]], np.int32))
        for s, tok in enumerate((4, 5, 6)):
            np.testing.assert_allclose(
                got[s], ref_logits(DIMS, T, audio, [1, 2, 3, tok]), atol=2e-4
            )
        with pytest.raises(saywho.OptionError):
            beams.copy_from(one, [0, 1, 0])  # the source has one row
        with pytest.raises(saywho.OptionError):
            beams.copy_from(one, [0, 0])  # one index per row of the copy
        other = m.new_state(m.encode(mel), 1)
        with pytest.raises(saywho.OptionError):
            beams.copy_from(other, [0, 0, 0])  # another audio
        with pytest.raises(TypeError):
            beams.copy_from("state", [0, 0, 0])


def test_float16_weights_and_cross_attention_capture(runtime):
    T = {k: v.astype(np.float16) for k, v in random_weights().items()}
    with _core.WhisperModel(runtime, DIMS, T) as m:
        enc = m.encode(random_mel(1))
        st = m.new_state(enc)
        assert st.cross_attention(0) is None
        st.capture_cross_attention(True)
        st.decode(np.array([[1, 2, 3]], np.int32))
        w = st.cross_attention(1)
        assert w.shape == (1, DIMS["n_text_head"], 3, DIMS["n_audio_ctx"])
        np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)
        assert st.cross_attention(DIMS["n_text_layer"]) is None


def test_missing_and_misshaped_tensors_are_model_errors(runtime):
    T = random_weights()
    del T["decoder.blocks.1.cross_attn.value.bias"]
    with pytest.raises(
        saywho.ModelError, match=r"decoder\.blocks\.1\.cross_attn\.value\.bias.*\[16\]"
    ):
        _core.WhisperModel(runtime, DIMS, T)
    T = random_weights()
    T["encoder.blocks.0.mlp.0.weight"] = T["encoder.blocks.0.mlp.0.weight"][:, :8]
    with pytest.raises(
        saywho.ModelError, match=r"mlp\.0\.weight' has shape \[64, 8\], expected \[64, 16\]"
    ):
        _core.WhisperModel(runtime, DIMS, T)
    with pytest.raises(saywho.ModelError, match="n_vocab"):
        _core.WhisperModel(runtime, {k: v for k, v in DIMS.items() if k != "n_vocab"}, T)
    assert runtime.memory()["allocated"] == 0  # nothing left behind by the failures


def test_bad_inputs_are_option_errors(runtime):
    with _core.WhisperModel(runtime, DIMS, random_weights()) as m:
        with pytest.raises(saywho.OptionError, match="mel must be"):
            m.encode(np.zeros((DIMS["n_mels"], 7), np.float32))
        st = m.new_state(m.encode(random_mel(1)))
        with pytest.raises(saywho.OptionError, match="vocabulary"):
            st.decode(np.array([[DIMS["n_vocab"]]], np.int32))
        with pytest.raises(saywho.OptionError, match="sequences"):
            st.decode(np.array([[1], [2]], np.int32))
        with pytest.raises(saywho.OptionError, match="text context"):
            st.decode(np.zeros((1, DIMS["n_text_ctx"] + 1), np.int32))
        assert st.length == 0  # a refused call changes nothing
        with pytest.raises(saywho.OptionError):
            st.reorder([1])
        with pytest.raises(saywho.OptionError, match="multiple"):
            m.new_state(m.encode(random_mel(2)), 3)


def test_close_returns_every_byte(runtime):
    base = runtime.memory()["allocated"]
    m = _core.WhisperModel(runtime, DIMS, random_weights())
    enc = m.encode(random_mel(2))
    st = m.new_state(enc, 2)
    st.decode(np.array([[1], [2]], np.int32))
    assert runtime.memory()["allocated"] > base
    m.close()  # frees the state and the encoder output too
    assert runtime.memory()["allocated"] == base
    assert st.closed and enc.closed and m.closed
    with pytest.raises(saywho.ModelError, match="closed"):
        st.decode(np.array([[1], [2]], np.int32))
    with pytest.raises(saywho.ModelError, match="closed"):
        m.encode(random_mel(1))


def test_closing_encoder_output_closes_its_states(runtime):
    with _core.WhisperModel(runtime, DIMS, random_weights()) as m:
        base = runtime.memory()["allocated"]
        enc = m.encode(random_mel(1))
        st = m.new_state(enc)
        enc.close()
        assert st.closed
        assert runtime.memory()["allocated"] == base


def test_runtime_closed_under_the_model():
    rt = _core.Runtime("cpu", threads=1)
    m = _core.WhisperModel(rt, DIMS, random_weights())
    st = m.new_state(m.encode(random_mel(1)))
    rt.close()
    with pytest.raises(saywho.DeviceError):
        st.decode(np.array([[1]], np.int32))
    m.close()  # frees host memory only; must not touch the dead pool


# ------------------------------------------------------ real weights vs CT2


def _tiny_en():
    from saywho.models.whisper_weights import load_whisper

    from .weights import test_model_dir

    path = test_model_dir("tiny.en")
    w = load_whisper(path)
    dims = w.dims
    if not isinstance(dims, Mapping):
        dims = dataclasses.asdict(dims) if dataclasses.is_dataclass(dims) else vars(dims)
    return str(path), dict(dims), w.tensors


@pytest.fixture(scope="module")
def tiny_en(jfk_wav):
    import ctranslate2  # the peer, installed by scripts/install_deps.sh

    path, dims, tensors = _tiny_en()
    samples = saywho.load_audio(str(jfk_wav))
    mel = np.ascontiguousarray(saywho.log_mel_spectrogram(samples, padding=480000)[:, :3000])
    peer = ctranslate2.models.Whisper(path, device="cpu", compute_type="float32", intra_threads=2)
    return path, dims, tensors, mel.astype(np.float32), peer, ctranslate2


SOT, NO_TIMESTAMPS, EOT = 50257, 50362, 50256  # tiny.en


def test_tiny_en_encoder_matches_ctranslate2(tiny_en):
    _, dims, tensors, mel, peer, ct2 = tiny_en
    want = np.array(peer.encode(ct2.StorageView.from_array(mel[None])))
    rt = _core.Runtime("cpu", threads=2)
    with _core.WhisperModel(rt, dims, tensors) as m:
        got = m.encode(mel).numpy()
    rt.close()
    diff = float(np.abs(got - want).max())
    print(f"tiny.en encoder vs CTranslate2: max abs diff {diff:.3g}")
    assert got.shape == want.shape == (1, 1500, 384)
    assert diff < 1e-3


def test_tiny_en_greedy_tokens_match_ctranslate2(tiny_en):
    _, dims, tensors, mel, peer, ct2 = tiny_en
    prompt = [SOT, NO_TIMESTAMPS]
    res = peer.generate(
        ct2.StorageView.from_array(mel[None]),
        [prompt],
        beam_size=1,
        sampling_topk=1,
        suppress_tokens=[],
        suppress_blank=False,
        max_length=448,
    )
    want = list(res[0].sequences_ids[0])
    rt = _core.Runtime("cpu", threads=2)
    with _core.WhisperModel(rt, dims, tensors) as m:
        st = m.new_state(m.encode(mel))
        logits = st.decode(np.array([prompt], np.int32))
        got = []
        while len(got) < 200:
            tok = int(np.argmax(logits[0]))
            if tok == EOT:
                break
            got.append(tok)
            logits = st.decode(np.array([[tok]], np.int32))
    assert rt.memory()["allocated"] == 0
    rt.close()
    assert len(want) > 10
    assert got == want
