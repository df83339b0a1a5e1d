"""Diarization speed: saywho's core against onnxruntime on the same graphs.

Assembles a multi-speaker recording of --minutes from tests/data/shared (the
two-speaker conversation, Kennedy, the stereo pair mixed down: five voices),
and diarizes it twice in one process with the same algorithm:

- saywho: segmentation-3.0 and the GE2E encoder on saywho's CPU backend;
- onnxruntime: segmentation-3.0's ONNX export, and the same GE2E weights as
  an ONNX graph built here (3 LSTM nodes with sequence_lens, MatMul, Relu,
  L2 norm), run by onnxruntime with the same thread count and batches.

Clustering and reconstruction are shared code, so the ratio is the networks'.
Prints each run's x-realtime and stage seconds, saywho's ratio over
onnxruntime (> 1: faster), and whether both found the same speakers. Also
runs saywho with --fast-step (a coarser chunk step) to show the trade.

    python3 bench/bench_diarization.py [--minutes 5] [--threads 2] [--fast-step 2.0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from saywho import _core  # noqa: E402
from saywho.diarization import Diarizer  # noqa: E402
from saywho.diarization.embedding_ge2e import HIDDEN, LAYERS, N_MELS, load_ge2e  # noqa: E402
from tests.long_recording import assemble  # noqa: E402
from tests.weights import test_diarization_models  # noqa: E402


def ge2e_onnx(weights: dict[str, np.ndarray]) -> bytes:
    """The GE2E encoder as an ONNX graph: mels [N, T, 40] and lengths [N] in,
    unit embeddings [N, 256] out."""
    from onnx import TensorProto, helper, numpy_helper

    def iofc(w: np.ndarray) -> np.ndarray:  # PyTorch's i, f, g, o -> ONNX's i, o, f, c
        i, f, g, o = np.split(w, 4, axis=0)
        return np.concatenate([i, o, f, g], axis=0)

    inits, nodes = [], []
    x = "x_tbc"
    nodes.append(helper.make_node("Transpose", ["mels"], [x], perm=[1, 0, 2]))
    for layer in range(LAYERS):
        w = iofc(weights[f"lstm.weight_ih_l{layer}"])[None]
        r = iofc(weights[f"lstm.weight_hh_l{layer}"])[None]
        b = np.concatenate(
            [iofc(weights[f"lstm.bias_ih_l{layer}"]), iofc(weights[f"lstm.bias_hh_l{layer}"])]
        )[None]
        for name, arr in (("W", w), ("R", r), ("B", b)):
            inits.append(numpy_helper.from_array(arr.astype(np.float32), f"{name}{layer}"))
        y, yh = f"y{layer}", f"yh{layer}"
        nodes.append(
            helper.make_node(
                "LSTM",
                [x, f"W{layer}", f"R{layer}", f"B{layer}", "lengths"],
                [y, yh],
                hidden_size=HIDDEN,
            )
        )
        x = f"x{layer + 1}"
        nodes.append(helper.make_node("Squeeze", [y, "axis1"], [x]))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "axis0"))
    inits.append(numpy_helper.from_array(weights["linear.weight"].T.copy(), "lin_w"))
    inits.append(numpy_helper.from_array(weights["linear.bias"], "lin_b"))
    nodes += [
        helper.make_node("Squeeze", [f"yh{LAYERS - 1}", "axis0"], ["h"]),
        helper.make_node("MatMul", ["h", "lin_w"], ["hw"]),
        helper.make_node("Add", ["hw", "lin_b"], ["lin"]),
        helper.make_node("Relu", ["lin"], ["raw"]),
        helper.make_node("ReduceL2", ["raw"], ["norm"], axes=[1], keepdims=1),
        helper.make_node("Div", ["raw", "norm"], ["embeddings"]),
    ]
    graph = helper.make_graph(
        nodes,
        "ge2e",
        [
            helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["N", "T", N_MELS]),
            helper.make_tensor_value_info("lengths", TensorProto.INT32, ["N"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["N", HIDDEN])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what onnxruntime releases of the last years all read
    return model.SerializeToString()


class OrtSegmentation:
    def __init__(self, path: str, options):
        import onnxruntime as ort

        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def run(self, chunks: np.ndarray) -> np.ndarray:
        return self.session.run(None, {self.input: chunks[:, None, :]})[0]

    def close(self) -> None:
        self.session = None


def use_onnxruntime(diarizer: Diarizer, seg_path: str, emb_path: str, threads: int) -> None:
    """Swaps the two networks of ``diarizer`` for onnxruntime sessions."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    diarizer.segmentation.close()
    diarizer.segmentation = OrtSegmentation(seg_path, options)
    session = ort.InferenceSession(
        ge2e_onnx(load_ge2e(emb_path)), options, providers=["CPUExecutionProvider"]
    )
    encoder = diarizer.embedding

    def embed_partials(mels, lengths=None):
        n, t = mels.shape[:2]
        lengths = np.full(n, t) if lengths is None else np.asarray(lengths)
        out = []
        for i in range(0, n, encoder.batch_size):
            x = np.ascontiguousarray(mels[i : i + encoder.batch_size], dtype=np.float32)
            lens = lengths[i : i + encoder.batch_size].astype(np.int32)
            out.append(session.run(None, {"mels": x[:, : lens.max()], "lengths": lens})[0])
        return np.concatenate(out)

    encoder.embed_partials = embed_partials


def run(name: str, diarizer: Diarizer, audio: np.ndarray) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = diarizer(audio)
    seconds = time.perf_counter() - t0
    stages = result.performance["stages"]
    print(
        f"{name:<28} {len(audio) / 16000 / seconds:6.1f}x realtime  {seconds:6.2f} s  "
        f"segmentation {stages['segmentation']['seconds']:.2f} s, "
        f"embeddings {stages['embeddings']['seconds']:.2f} s, "
        f"{len(result.speakers)} speakers"
    )
    return seconds, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fast-step", type=float, default=2.0)
    args = ap.parse_args()
    from machine import describe

    print(describe())  # the CPU and kernels, so figures are never compared blind
    data = REPO / "tests" / "data" / "shared"
    audio = assemble(data, args.minutes)
    seg, emb = (str(p) for p in test_diarization_models())
    print(f"{len(audio) / 16000 / 60:.1f} min of multi-speaker audio, {args.threads} threads")

    runtime = _core.Runtime(device="cpu", threads=args.threads)
    with Diarizer(seg, emb, runtime) as ours:
        t_ours, r_ours = run("saywho", ours, audio)
    with Diarizer(seg, emb, runtime, step=args.fast_step) as fast:
        t_fast, _ = run(f"saywho, step {args.fast_step:g} s", fast, audio)
    with Diarizer(seg, emb, runtime) as theirs:
        use_onnxruntime(theirs, seg, emb, args.threads)
        t_ort, r_ort = run("onnxruntime, same graphs", theirs, audio)
    runtime.close()
    same = [(t.start, t.end, t.speaker) for t in r_ours.turns] == [
        (t.start, t.end, t.speaker) for t in r_ort.turns
    ]
    print(f"saywho / onnxruntime: {t_ort / t_ours:.2f}x (> 1: saywho faster)")
    print(f"saywho step {args.fast_step:g} s / onnxruntime step 1 s: {t_ort / t_fast:.2f}x")
    print(f"same turns from both: {same}")


if __name__ == "__main__":
    main()
