"""Whisper forward speed: saywho's C core against CTranslate2, same weights.

Times the encoder on one 30 s window and greedy decoding of jfk (prompt, then
one token per step until <|endoftext|>; both sides produce the same tokens),
CTranslate2 float32 on the CPU with the same thread count, in one process.
Prints seconds, and saywho's speed ratio over CTranslate2 (> 1: faster).

    python3 bench/bench_whisper_model.py [model_dir] [--threads 2] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np

import saywho
from saywho import _core


def load(model_dir: str | None):
    from saywho.models.whisper_weights import load_whisper

    if model_dir is None:
        from checkout_weights import whisper_dir

        model_dir = str(whisper_dir("tiny.en"))
    w = load_whisper(model_dir)
    dims = w.dims
    if not isinstance(dims, Mapping):
        dims = dataclasses.asdict(dims) if dataclasses.is_dataclass(dims) else vars(dims)
    return model_dir, dict(dims), w.tensors


def main() -> None:
    jfk = Path(__file__).resolve().parents[1] / "tests" / "data" / "shared" / "jfk.wav"
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", nargs="?", help="a CTranslate2 Whisper directory (tiny.en)")
    ap.add_argument("--audio", default=str(jfk))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from machine import describe
    from timing import best_of

    print(describe())  # the CPU and kernels, so figures are never compared blind

    import ctranslate2

    model_dir, dims, tensors = load(args.model_dir)
    multilingual = dims["n_vocab"] >= 51865
    sot = 50258 if multilingual else 50257
    prompt = [sot, 50259, 50359, 50363] if multilingual else [sot, 50362]
    eot = 50257 if multilingual else 50256

    samples = saywho.load_audio(args.audio)
    mel = np.ascontiguousarray(saywho.log_mel_spectrogram(samples, padding=480000)[:, :3000])
    mel = mel.astype(np.float32)

    peer = ctranslate2.models.Whisper(
        model_dir, device="cpu", compute_type="float32", intra_threads=args.threads
    )
    feats = ctranslate2.StorageView.from_array(mel[None])
    enc_peer = peer.encode(feats)

    def peer_decode():
        return peer.generate(
            enc_peer,  # encoder output: generate skips the encoder
            [prompt],
            beam_size=1,
            sampling_topk=1,
            suppress_tokens=[],
            suppress_blank=False,
        )[0].sequences_ids[0]

    rt = _core.Runtime("cpu", threads=args.threads)
    model = _core.WhisperModel(rt, dims, tensors)
    enc = model.encode(mel)

    def ours_decode():
        st = model.new_state(enc)
        logits = st.decode(np.array([prompt], np.int32))
        out = []
        while len(out) < 440:
            tok = int(np.argmax(logits[0]))
            if tok == eot:
                break
            out.append(tok)
            logits = st.decode(np.array([[tok]], np.int32))
        st.close()
        return out

    tokens = ours_decode()
    same = tokens == list(peer_decode())

    def ours_encode():
        model.encode(mel).close()

    rows = [
        (
            "encoder, 30 s",
            best_of(ours_encode, args.repeat),
            best_of(lambda: peer.encode(feats), args.repeat),
        ),
        (
            f"greedy decode, {len(tokens)} tokens",
            best_of(ours_decode, args.repeat),
            best_of(peer_decode, args.repeat),
        ),
    ]
    print(f"model {model_dir}  threads {args.threads}  float32  CPU")
    print(f"tokens identical to CTranslate2: {same}")
    print(f"{'stage':<28}{'saywho s':>10}{'ct2 s':>10}{'ratio':>8}")
    for name, ours, theirs in rows:
        print(f"{name:<28}{ours:>10.3f}{theirs:>10.3f}{theirs / ours:>8.2f}")
    n = max(len(tokens), 1)
    print(
        f"per token: saywho {rows[1][1] / n * 1e3:.1f} ms, ctranslate2 {rows[1][2] / n * 1e3:.1f} ms"
    )
    model.close()
    rt.close()


if __name__ == "__main__":
    main()
