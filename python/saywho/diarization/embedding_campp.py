"""CAM++ (3D-Speaker), saywho's default speaker encoder, behind the embedding interface.

The zh+en "common advanced" model (iic/speech_campplus_sv_zh_en_16k-common_advanced,
Apache-2.0): 80-bin Kaldi fbank with Kaldi's default "povey" window on
the [-1, 1] waveform, each bin's mean over the utterance removed; a D-TDNN
with context-aware masking (csrc/diar/campp.h describes it); a 192-d
embedding. The network runs in the core (``_core.CamppModel``), one call
per batch of equally long feature sequences; this file reads the
state_dict without torch, folds every inference BatchNorm that follows a
linear map into it, and lays each convolution out as the core expects.

Masks choose frames, as for GE2E: a speaker's embedding in a chunk is the
network's output on the fbank frames its mask keeps, joined in order and
mean-normalised, which is what 3D-Speaker does with an utterance (CAM++
pools over every frame it is given, so it has no masked pooling).
"""

from __future__ import annotations

import os

import numpy as np

from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE
from ..audio.features import fbank
from ..models.torch_checkpoint import load_checkpoint, state_dict
from .embedding_ge2e import resample_mask, waveform_batch

FEAT_DIM = 80
EMBED_DIM = 192
BN_EPS = 1e-5
BLOCKS = ((12, 1), (24, 2), (16, 2))  # (CAM layers, dilation) per dense block
MIN_FRAMES = 3  # fbank frames the network needs (two after its stride-2 layer)
FRONT_REACH = 10  # frames either side the 2-D front reads (ten 3-tap layers)
# the shared front's feature mean: speech frames within this many either side
# (3 s; DER on the assemblies at 300, 500, 1500: 5.3/5.6/5.3% on
# two_speakers, 16.2/16.2/17.4% on the real five-voice one, docs/diarization.md)
SHARED_MEAN_HALF = 300
FBANK_FRAME, FBANK_HOP = 400, 160  # Kaldi's 25 ms frames every 10 ms at 16 kHz
# 3D-Speaker's front end: torchaudio's kaldi.fbank defaults on the [-1, 1] waveform.
FBANK = {"num_mel_bins": FEAT_DIM, "povey_window": True, "input_scale": 1.0}

# The clustering's threshold for these embeddings (Euclidean distance of unit
# vectors; docs/diarization.md says how it was tuned and on what: the middle
# of 0.75-0.77, where every real assembly of 5 to 9 voices gets its count).
CLUSTER_THRESHOLD = 0.76

# A tensor only CAM++ checkpoints hold, to tell them from GE2E and ResNet34.
SIGNATURE = "xvector.block1.tdnnd1.cam_layer.linear_local.weight"


def _bn(sd, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Inference BatchNorm as x * scale + shift (affine=False has no weight)."""
    var = sd[f"{name}.running_var"].astype(np.float64)
    scale = 1.0 / np.sqrt(var + BN_EPS)
    if f"{name}.weight" in sd:
        scale = scale * sd[f"{name}.weight"]
    shift = -sd[f"{name}.running_mean"] * scale
    if f"{name}.bias" in sd:
        shift = shift + sd[f"{name}.bias"]
    return scale, shift


def _taps(w: np.ndarray) -> np.ndarray:
    """[C_out, C_in, (3, 3) or K] -> [C_out, taps * C_in], tap-major as the core's im2col."""
    if w.ndim == 4:
        return w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
    return w.transpose(0, 2, 1).reshape(w.shape[0], -1)


def prepare(sd: dict[str, np.ndarray], path: str = "weights") -> dict[str, np.ndarray]:
    """3D-Speaker's CAMPPlus state_dict -> the core's tensors (docs/campp.md)."""
    if SIGNATURE not in sd:
        raise _core.ModelError(f"{path}: not a CAM++ checkpoint: no tensor {SIGNATURE!r}")
    out: dict[str, np.ndarray] = {}

    def need(name: str) -> np.ndarray:
        if name not in sd:
            raise _core.ModelError(f"{path}: CAM++ checkpoint lacks tensor {name!r}")
        return sd[name]

    def bn_of(name: str) -> tuple[np.ndarray, np.ndarray]:
        need(f"{name}.running_var")
        return _bn(sd, name)

    def conv_bn(dst: str, conv: str, bn: str) -> None:
        """A linear map followed by a BatchNorm, folded into one."""
        w = need(conv).astype(np.float64)
        scale, shift = bn_of(bn)
        out[f"{dst}.weight"] = _taps(w * scale.reshape((-1,) + (1,) * (w.ndim - 1)))
        out[f"{dst}.bias"] = shift

    conv_bn("head.conv1", "head.conv1.weight", "head.bn1")
    for stage in (1, 2):
        for i in (0, 1):
            p = f"head.layer{stage}.{i}"
            conv_bn(f"{p}.conv1", f"{p}.conv1.weight", f"{p}.bn1")
            conv_bn(f"{p}.conv2", f"{p}.conv2.weight", f"{p}.bn2")
            if i == 0:
                conv_bn(f"{p}.shortcut", f"{p}.shortcut.0.weight", f"{p}.shortcut.1")
    conv_bn("head.conv2", "head.conv2.weight", "head.bn2")
    conv_bn("tdnn", "xvector.tdnn.linear.weight", "xvector.tdnn.nonlinear.batchnorm")
    for k, (layers, _) in enumerate(BLOCKS, start=1):
        for i in range(1, layers + 1):
            src, dst = f"xvector.block{k}.tdnnd{i}", f"block{k}.{i}"
            scale, shift = bn_of(f"{src}.nonlinear1.batchnorm")
            out[f"{dst}.norm.scale"], out[f"{dst}.norm.shift"] = scale, shift
            conv_bn(f"{dst}.linear1", f"{src}.linear1.weight", f"{src}.nonlinear2.batchnorm")
            out[f"{dst}.local.weight"] = _taps(need(f"{src}.cam_layer.linear_local.weight"))
            for a, b in (("ctx1", "linear1"), ("ctx2", "linear2")):
                out[f"{dst}.{a}.weight"] = need(f"{src}.cam_layer.{b}.weight")[:, :, 0]
                out[f"{dst}.{a}.bias"] = need(f"{src}.cam_layer.{b}.bias")
        scale, shift = bn_of(f"xvector.transit{k}.nonlinear.batchnorm")
        out[f"transit{k}.norm.scale"], out[f"transit{k}.norm.shift"] = scale, shift
        if k < len(BLOCKS):
            out[f"transit{k}.weight"] = need(f"xvector.transit{k}.linear.weight")[:, :, 0]
        else:  # out_nonlinear's BatchNorm follows the last transition's linear map
            conv_bn(
                f"transit{k}",
                f"xvector.transit{k}.linear.weight",
                "xvector.out_nonlinear.batchnorm",
            )
    conv_bn("dense", "xvector.dense.linear.weight", "xvector.dense.nonlinear.batchnorm")
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}


def load_campp(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The core's tensors from a CAM++ checkpoint (a plain state_dict, read without torch)."""
    name = os.fspath(path)
    checkpoint = load_checkpoint(name)
    for key in ("state_dict", "model_state", "model"):
        if isinstance(checkpoint, dict) and key in checkpoint:
            checkpoint = checkpoint[key]
    return prepare(state_dict(checkpoint), name)


def campp_features(audio: np.ndarray, threads: int = 0) -> np.ndarray:
    """3D-Speaker's front end without the mean removal: log fbank [T, 80]
    (``threads``: the Runtime's, 0 for one per CPU)."""
    return fbank(audio, subtract_mean=False, threads=threads, **FBANK)


def _normalised(features: np.ndarray) -> np.ndarray:
    return (features - features.mean(axis=0, dtype=np.float64)).astype(np.float32)


def _speech_normalised(features: np.ndarray, speech: np.ndarray, half: int) -> np.ndarray:
    """Each frame less the mean of the speech frames within ``half`` frames
    of it (the span's mean where none are), for the shared front."""
    t = len(features)
    w = speech.astype(np.float64)
    sums = np.zeros((t + 1, features.shape[1]))
    np.cumsum(features * w[:, None], axis=0, out=sums[1:])
    counts = np.concatenate([[0.0], np.cumsum(w)])
    at = np.arange(t)
    lo, hi = np.maximum(at - half, 0), np.minimum(at + half + 1, t)
    n = (counts[hi] - counts[lo])[:, None]
    mean = np.where(
        n > 0, (sums[hi] - sums[lo]) / np.maximum(n, 1), features.mean(axis=0, dtype=np.float64)
    )
    return (features - mean).astype(np.float32)


class CamppEmbedding(RuntimeUser):
    """``model(waveforms [B, samples], masks [B, frames] or None) -> [B, 192]``.

    ``batch_frames`` bounds the fbank frames of one call: 2000 gives the
    products their full speed (8000 was no faster on 2 cores) and keeps the
    pool's peak near 80 MB (the 2-D front's activations are 32 channels x
    80 rows a frame)."""

    dimension = EMBED_DIM
    sample_rate = SAMPLE_RATE
    threshold = CLUSTER_THRESHOLD

    def __init__(
        self,
        source: str | os.PathLike[str] | dict[str, np.ndarray],
        runtime: _core.Runtime | None = None,
        batch_frames: int = 2000,
    ) -> None:
        if batch_frames < 1:
            raise _core.OptionError("batch_frames must be at least 1")
        tensors = source if isinstance(source, dict) else load_campp(source)
        self._use_runtime(runtime)
        with self._opening():  # a refused model leaves no Runtime open
            self._model = _core.CamppModel(self.runtime, tensors)
        self.batch_frames = batch_frames

    # -- the network ------------------------------------------------------------
    def embed_features(self, features: np.ndarray) -> np.ndarray:
        """Mean-normalised fbank [B, T, 80] (every item T frames) -> [B, 192]."""
        self._live()  # a ModelError once closed
        x = np.ascontiguousarray(features, dtype=np.float32)
        per_call = max(1, self.batch_frames // max(x.shape[1], 1))
        out = np.empty((len(x), EMBED_DIM), dtype=np.float32)
        for i in range(0, len(x), per_call):
            out[i : i + per_call] = self._model.run(x[i : i + per_call])
        return out

    def embed_sequences(self, sequences: list[np.ndarray]) -> np.ndarray:
        """One embedding per fbank sequence [T_i, 80] (raw, not normalised);
        NaN for one shorter than MIN_FRAMES. Sequences of any lengths share a
        call (``run_items``) up to ``batch_frames`` frames: each is computed
        as alone, and bigger products run faster than one call per length."""
        self._live()  # a ModelError once closed
        out = np.full((len(sequences), EMBED_DIM), np.nan, dtype=np.float32)
        todo = [k for k, seq in enumerate(sequences) if len(seq) >= MIN_FRAMES]
        start = 0
        while start < len(todo):
            stop, frames = start, 0
            while stop < len(todo) and (
                stop == start or frames + len(sequences[todo[stop]]) <= self.batch_frames
            ):
                frames += len(sequences[todo[stop]])
                stop += 1
            items = todo[start:stop]
            batch = np.concatenate([_normalised(sequences[k]) for k in items])
            lengths = np.array([len(sequences[k]) for k in items], dtype=np.int64)
            out[items] = self._model.run_items(batch, lengths)
            start = stop
        return out

    # -- the embedding interface --------------------------------------------------
    def embed_speakers(self, waveforms: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Chunks [B, samples] and their local speakers' masks [B, S, frames]
        -> [B, S, 192]; NaN where a mask keeps fewer than MIN_FRAMES frames."""
        w = waveform_batch(waveforms)
        return self._embed_masked([campp_features(row, self.runtime.threads) for row in w], masks)

    def embed_speakers_in_span(
        self,
        span: np.ndarray,
        offsets: np.ndarray,
        window: int,
        masks: np.ndarray,
        shared_front: bool = False,
        on_device=None,
    ) -> np.ndarray:
        """``embed_speakers`` for the chunks span[o : o + window] at each
        offset o (the span reaching the last one's end): the fbank is taken
        once for the span. A frame's fbank reads only its own 400 samples,
        so on the 160-sample grid each chunk's frames are the span's, bit for
        bit; pyannote's chunks overlap nine tenths, and the fbank of each
        was done ten times.

        ``shared_front``: an approximation (see ``_embed_shared_front``)
        that runs the 2-D front once per frame of the span instead of once
        per (chunk, speaker) sequence.

        Where the device makes the features itself (a GPU:
        ``CamppModel.features_on_device``), the span goes up instead of them
        (``_embed_span_on_device``), or is read where it is: ``on_device``, a
        ``_core.AudioSpan`` of ``span`` (the Diarizer's, which segmentation
        read too)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        if len(offsets) == 0 or (offsets % FBANK_HOP).any():
            chunks = np.stack([span[o : o + window] for o in offsets])
            return self.embed_speakers(chunks, masks)
        span = np.ascontiguousarray(span, np.float32)
        if not shared_front and self._model.features_on_device():
            return self._embed_span_on_device(span, offsets, window, masks, on_device)
        feats = campp_features(span, self.runtime.threads)
        n = 1 + (window - FBANK_FRAME) // FBANK_HOP
        if shared_front:
            return self._embed_shared_front(feats, offsets // FBANK_HOP, n, masks)
        return self._embed_masked([feats[o // FBANK_HOP :][:n] for o in offsets], masks)

    def _embed_span_on_device(
        self, span: np.ndarray, offsets: np.ndarray, window: int, masks: np.ndarray, on_device=None
    ) -> np.ndarray:
        """``embed_speakers_in_span`` with the fbank made on the device: the
        span's samples go up, and the span frames each (chunk, speaker) keeps
        (int32 ids, chosen as ``_embed_masked`` chooses them); the device
        takes the fbank of the span, gathers each sequence's frames less their
        own mean and runs the network (``CamppModel.run_span``). The host
        path's embeddings to float rounding, with the audio's 4 bytes a sample
        up instead of 80 floats a kept frame."""
        total = 1 + (len(span) - FBANK_FRAME) // FBANK_HOP if len(span) >= FBANK_FRAME else 0
        n = 1 + (window - FBANK_FRAME) // FBANK_HOP
        frames, lengths, owners = [], [], []
        for b, o in enumerate(offsets):
            first = int(o) // FBANK_HOP
            count = max(0, min(n, total - first))
            for j in range(masks.shape[1]):
                keep = resample_mask(np.asarray(masks[b, j], np.float32), count) > 0.5
                if keep.sum() >= MIN_FRAMES:
                    frames.append(first + np.flatnonzero(keep))
                    lengths.append(len(frames[-1]))
                    owners.append((b, j))
        out = np.full((len(offsets), masks.shape[1], EMBED_DIM), np.nan, dtype=np.float32)
        if owners:
            self._live()  # a ModelError once closed
            ids = np.concatenate(frames).astype(np.int32)
            lengths = np.array(lengths, np.int64)
            got = self._model.run_span(span, ids, lengths, self.batch_frames, on_device)
            for (b, j), row in zip(owners, got):
                out[b, j] = row
        return out

    def _keeps(self, masks: np.ndarray, frames: int) -> np.ndarray:
        """Which of a chunk's fbank frames each local speaker's mask keeps: [B, S, frames]."""
        keep = np.zeros(masks.shape[:2] + (frames,), dtype=bool)
        for b in range(masks.shape[0]):
            for j in range(masks.shape[1]):
                keep[b, j] = resample_mask(np.asarray(masks[b, j], np.float32), frames) > 0.5
        return keep

    def _embed_shared_front(
        self, feats: np.ndarray, firsts: np.ndarray, n: int, masks: np.ndarray
    ) -> np.ndarray:
        """The 2-D front once over the span's frames, each (chunk, speaker)
        sequence then made of its kept frames' front rows. Two departures
        from running each sequence alone, which is why this is an option:
        a frame's features lose a mean of speech around it (the speech
        frames within SHARED_MEAN_HALF either side) instead of its
        sequence's own mean, and the front reads a kept frame's real
        neighbours instead of the frames the gathering put beside it. At a
        1 s step the front (about 45% of CAM++'s multiply-adds) ran about
        ten times per frame of speech."""
        keeps = self._keeps(masks, n)
        speech = np.zeros(len(feats), dtype=bool)
        for b, f0 in enumerate(firsts):
            speech[f0 : f0 + n] |= keeps[b].any(axis=0)
        front = self._front(_speech_normalised(feats, speech, SHARED_MEAN_HALF))
        sequences, owners = [], []
        for b, f0 in enumerate(firsts):
            for j in range(masks.shape[1]):
                rows = f0 + np.flatnonzero(keeps[b, j])
                if len(rows) >= MIN_FRAMES:
                    sequences.append(front[rows])
                    owners.append((b, j))
        out = np.full((len(firsts), masks.shape[1], EMBED_DIM), np.nan, dtype=np.float32)
        for items in self._packs([len(q) for q in sequences]):
            lengths = np.array([len(sequences[k]) for k in items], dtype=np.int64)
            rows = np.concatenate([sequences[k] for k in items])
            for k, row in zip(items, self._model.run_front_items(rows, lengths)):
                out[owners[k]] = row
        return out

    def _front(self, feats: np.ndarray) -> np.ndarray:
        """The 2-D front over any number of frames, in pieces of about
        ``batch_frames`` (the pool's peak) that overlap by the front's reach
        so that each piece's kept rows are the whole sequence's."""
        if len(feats) <= self.batch_frames + 2 * FRONT_REACH:
            return self._model.front(feats)
        out = np.empty((len(feats), 320), dtype=np.float32)
        margin = 2 * FRONT_REACH
        for lo in range(0, len(feats), self.batch_frames):
            hi = min(lo + self.batch_frames, len(feats))
            a, b = max(lo - margin, 0), min(hi + margin, len(feats))
            out[lo:hi] = self._model.front(feats[a:b])[lo - a : hi - a]
        return out

    def _packs(self, lengths: list[int]):
        """Consecutive runs of items whose frames add up to at most
        ``batch_frames`` (at least one item each)."""
        start = 0
        while start < len(lengths):
            stop, frames = start, 0
            while stop < len(lengths) and (
                stop == start or frames + lengths[stop] <= self.batch_frames
            ):
                frames += lengths[stop]
                stop += 1
            yield list(range(start, stop))
            start = stop

    def _embed_masked(self, feats: list[np.ndarray], masks: np.ndarray) -> np.ndarray:
        sequences, owners = [], []
        for b, f in enumerate(feats):
            for j in range(masks.shape[1]):
                keep = resample_mask(np.asarray(masks[b, j], np.float32), len(f)) > 0.5
                if keep.sum() >= MIN_FRAMES:
                    sequences.append(f[keep])
                    owners.append((b, j))
        out = np.full((len(feats), masks.shape[1], EMBED_DIM), np.nan, dtype=np.float32)
        if sequences:
            for (b, j), row in zip(owners, self.embed_sequences(sequences)):
                out[b, j] = row
        return out

    def __call__(self, waveforms: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        w = waveform_batch(waveforms)
        if masks is None:
            return self.embed_sequences([campp_features(row, self.runtime.threads) for row in w])
        m = np.asarray(masks, dtype=np.float32)
        return self.embed_speakers(w, m[:, None, :])[:, 0]
