"""A GE2E speaker encoder (resemblyzer's weights) behind the embedding interface.

pyannote 3.1 embeds speakers with WeSpeaker's ResNet34, whose weights no
PyPI package carries; resemblyzer 0.1.4 ships a real, trained GE2E encoder
(Wan et al. 2018): 40-band mel power frames every 10 ms, a 3-layer LSTM of
256, a linear layer of 256, ReLU and L2 normalisation. It was trained on
partial utterances of 160 frames (1.6 s), so a speaker's frames are cut into
such partials, each embedded, and the mean re-normalised, as resemblyzer's
``embed_utterance`` does.

The network is the core's GE2E model (csrc/diar/ge2e.c): created once, its
weights uploaded once, one call per batch of partials from mel frames to
unit embeddings; the mel frames come from the core's STFT
(``mel_power_spectrogram``), or, where the device makes them itself (a GPU:
``GE2EModel.mels_on_device``), from the span's audio on the device
(``embed_span``). A speaker's frames in
a chunk are those its mask marks, gathered in order: the LSTM reads only
that speaker's speech, which is what pyannote's masked pooling achieves for
the ResNet.
"""

from __future__ import annotations

import os

import numpy as np

from .._internal.native import _core
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE
from ..models.torch_checkpoint import load_checkpoint, state_dict
from .clustering import MERGE_DISTANCE_THRESHOLD

HOP = 160  # samples per mel frame (10 ms)
N_MELS = 40
HIDDEN = 256
LAYERS = 3
PARTIAL = 160  # frames per partial utterance, as the encoder was trained
TARGET_DBFS = -30.0  # resemblyzer's volume normalisation (increase only)
PARTIALS_PER_CALL_CPU = 64
PARTIALS_PER_CALL_DEVICE = 1024


def load_ge2e(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The encoder's arrays from resemblyzer's pretrained.pt (read without torch)."""
    name = os.fspath(path)
    checkpoint = load_checkpoint(name)
    if isinstance(checkpoint, dict) and "model_state" in checkpoint:
        checkpoint = checkpoint["model_state"]
    tensors = state_dict(checkpoint)
    want = {"linear.weight": (HIDDEN, HIDDEN), "linear.bias": (HIDDEN,)}
    for layer in range(LAYERS):
        want[f"lstm.weight_ih_l{layer}"] = (4 * HIDDEN, N_MELS if layer == 0 else HIDDEN)
        want[f"lstm.weight_hh_l{layer}"] = (4 * HIDDEN, HIDDEN)
        want[f"lstm.bias_ih_l{layer}"] = (4 * HIDDEN,)
        want[f"lstm.bias_hh_l{layer}"] = (4 * HIDDEN,)
    for key, shape in want.items():
        if key not in tensors:
            raise _core.ModelError(f"{name}: not a GE2E encoder checkpoint: no tensor {key!r}")
        if tuple(tensors[key].shape) != shape:
            raise _core.ModelError(
                f"{name}: tensor {key!r} has shape {tuple(tensors[key].shape)}, expected {shape}"
            )
    return {k: np.ascontiguousarray(tensors[k], dtype=np.float32) for k in want}


def partial_starts(length: int, step: int) -> list[int]:
    """Where partials of PARTIAL frames start in a run of ``length`` frames:
    every ``step`` frames, the last one flush with the end so that no frame is
    left out. A run shorter than one partial is one partial of its own length."""
    if length <= PARTIAL:
        return [0]
    starts = list(range(0, length - PARTIAL + 1, step))
    if starts[-1] != length - PARTIAL:
        starts.append(length - PARTIAL)
    return starts


class GE2EEncoder(RuntimeUser):
    """``encoder(waveforms [B, samples], masks [B, frames]) -> [B, 256]``.

    ``masks`` may have any frame rate (pyannote's segmentation frames, say):
    they are resampled to the 10 ms mel frames by nearest neighbour. A row
    whose mask keeps no frame gets NaN, as pyannote does for too-short masks.
    """

    dimension = HIDDEN
    sample_rate = SAMPLE_RATE
    threshold = MERGE_DISTANCE_THRESHOLD  # the clustering's, tuned for these embeddings

    def __init__(
        self,
        source: str | os.PathLike[str] | dict[str, np.ndarray],
        runtime: _core.Runtime | None = None,
        partial_step: int = PARTIAL // 2,
        batch_size: int | None = None,
    ) -> None:
        if not 1 <= partial_step <= PARTIAL:
            raise _core.OptionError(f"partial_step must be 1 to {PARTIAL} frames")
        if batch_size is not None and batch_size < 1:
            raise _core.OptionError("batch_size must be at least 1")
        tensors = source if isinstance(source, dict) else load_ge2e(source)
        self._use_runtime(runtime)
        with self._opening():  # a refused model leaves no Runtime open
            self._model = _core.GE2EModel(self.runtime, tensors)
        self.partial_step = partial_step
        if batch_size is None:
            # on a GPU a call is a round trip: a diarization batch's partials
            # (32 chunks, up to 3 speakers, about 13 partials each) in one
            # call, ~0.4 MB of device memory each; the CPU's 64 bound memory
            on_cpu = self.runtime.device == "cpu"
            batch_size = PARTIALS_PER_CALL_CPU if on_cpu else PARTIALS_PER_CALL_DEVICE
        self.batch_size = batch_size

    # -- the network ----------------------------------------------------------
    def embed_partials(self, mels: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
        """[N, T, 40] mel power frames -> [N, 256] unit embeddings.

        Row n may be shorter than T: ``lengths[n]`` frames, then zeros. The
        LSTM is causal, so its state after frame lengths[n] - 1 is the state
        of the unpadded row, and rows of any length share one batch.
        """
        self._live()  # a ModelError once closed
        n, t = mels.shape[:2]
        lengths = np.full(n, t, np.int64) if lengths is None else np.asarray(lengths, np.int64)
        out = np.empty((n, HIDDEN), dtype=np.float32)
        for i in range(0, n, self.batch_size):
            rows = lengths[i : i + self.batch_size]
            x = np.ascontiguousarray(mels[i : i + self.batch_size, : int(rows.max())], np.float32)
            out[i : i + len(x)] = self._model.run(x, rows)
        return out

    def embed_sequences(self, sequences: list[np.ndarray]) -> np.ndarray:
        """One embedding per sequence of mel frames [T_i, 40] (NaN when empty):
        the normalised mean of its partials' embeddings."""
        out = np.full((len(sequences), HIDDEN), np.nan, dtype=np.float32)
        owners, pieces = [], []
        for k, seq in enumerate(sequences):
            if len(seq) == 0:
                continue
            for s in partial_starts(len(seq), self.partial_step):
                pieces.append(seq[s : s + PARTIAL])
                owners.append(k)
        if not pieces:
            return out
        if self.runtime.device != "cpu":
            return self._embed_on_device(pieces, np.asarray(owners), out)
        batch, lengths, order = _longest_first(pieces)
        embedded = self.embed_partials(batch, lengths)
        sums = np.zeros((len(sequences), HIDDEN), dtype=np.float64)
        np.add.at(sums, np.asarray(owners)[order], embedded)
        done = np.any(sums != 0, axis=1)
        norms = np.linalg.norm(sums[done], axis=1, keepdims=True)
        out[done] = (sums[done] / np.maximum(norms, 1e-12)).astype(np.float32)
        return out

    def _embed_on_device(self, pieces, owners: np.ndarray, out: np.ndarray) -> np.ndarray:
        """embed_sequences on a GPU: each sequence's partials summed and
        normalised on the device, so only the sequences' embeddings come
        down, a call per up to batch_size partials (whole sequences: a
        sequence longer than that is a call of its own). Sums in float32
        there, float64 on the CPU: equal to a few units in the last place."""
        self._live()
        # where each sequence's partials start (owners ascend), then the end
        edges = np.concatenate([[0], np.flatnonzero(np.diff(owners)) + 1, [len(owners)]])
        first = 0
        for j in range(1, len(edges)):
            if edges[j] - first > self.batch_size and edges[j - 1] > first:
                self._pooled_call(pieces, owners, first, int(edges[j - 1]), out)
                first = int(edges[j - 1])
        self._pooled_call(pieces, owners, first, len(owners), out)
        return out

    def _pooled_call(self, pieces, owners, first: int, last: int, out: np.ndarray) -> None:
        groups, local = np.unique(owners[first:last], return_inverse=True)
        batch, lengths, order = _longest_first(pieces[first:last])
        out[groups] = self._model.run(batch, lengths, local[order].astype(np.int32))

    def mels_on_device(self) -> bool:
        """Whether the device makes the mels from the audio (``embed_span``)."""
        self._live()
        return bool(self._model.mels_on_device())

    def embed_span(
        self, span: np.ndarray, sequences: list[tuple[np.ndarray, float]], on_device=None
    ) -> np.ndarray:
        """``embed_sequences`` where the device makes the mels: sequence k is
        the span's mel frames ``sequences[k][0]`` (ids on the span's 10 ms
        grid, in order) times its gain ``sequences[k][1]`` (``select_frames``).
        The span goes up once, then an int32 id per frame of each partial,
        instead of 40 floats (``GE2EModel.run_span``); the host path's
        embeddings to float rounding (the mels' FFT sums in another order).
        ``on_device``: a ``_core.AudioSpan`` of ``span`` already there (the
        Diarizer's, which segmentation read), so the span does not go up."""
        self._live()
        out = np.full((len(sequences), HIDDEN), np.nan, dtype=np.float32)
        kept = [k for k, (ids, _) in enumerate(sequences) if len(ids)]
        if not kept:
            return out
        frames, starts, lengths, owners, at = [], [], [], [], 0
        for g, k in enumerate(kept):
            ids = np.asarray(sequences[k][0], np.int32)
            for s in partial_starts(len(ids), self.partial_step):
                starts.append(at + s)
                lengths.append(min(PARTIAL, len(ids) - s))
                owners.append(g)
            frames.append(ids)
            at += len(ids)
        gains = np.array([sequences[k][1] for k in kept], np.float32)
        out[kept] = self._model.run_span(
            np.ascontiguousarray(span, np.float32),
            np.concatenate(frames),
            np.array(starts, np.int64),
            np.array(lengths, np.int64),
            np.array(owners, np.int32),
            gains,
            self.batch_size,
            on_device,
        )
        return out

    # -- the embedding interface ----------------------------------------------
    def features(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mel power frames [T, 40] of mono 16 kHz audio, and each frame's
        mean square (for the volume normalisation)."""
        x = np.ascontiguousarray(audio, dtype=np.float32).reshape(-1)
        mel = _core.mel_power_spectrogram(x, n_mels=N_MELS, threads=self.runtime.threads)
        return mel, frame_energy(x, len(mel))

    def select(self, mel: np.ndarray, energy: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The frames ``mask`` (already on the mel frame grid) keeps, with
        resemblyzer's volume normalisation: quiet speech raised to -30 dBFS."""
        ids, gain = select_frames(energy, mask)
        frames = mel[ids]
        if gain != 1.0:
            frames = frames * gain  # power
        return frames

    def __call__(self, waveforms: np.ndarray, masks: np.ndarray | None = None) -> np.ndarray:
        w = waveform_batch(waveforms)
        sequences = []
        for b in range(len(w)):
            mel, energy = self.features(w[b])
            if masks is None:
                mask = np.ones(len(mel), dtype=np.float32)
            else:
                mask = resample_mask(np.asarray(masks[b], dtype=np.float32), len(mel))
            sequences.append(self.select(mel, energy, mask))
        return self.embed_sequences(sequences)


def frame_energy(x: np.ndarray, frames: int) -> np.ndarray:
    """Each of ``frames`` mel frames' mean square of its 160 samples
    (float64; zero past the audio's whole frames)."""
    energy = np.zeros(frames, dtype=np.float64)
    whole = min(frames, len(x) // HOP)
    if whole:
        energy[:whole] = np.mean(np.square(x[: whole * HOP].reshape(whole, HOP)), axis=1)
    return energy


def select_frames(energy: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """The frames ``mask`` (on the mel frame grid) keeps, and the gain
    (float32) resemblyzer's volume normalisation multiplies their mel power
    by: quiet speech raised to -30 dBFS, 1 otherwise."""
    ids = np.flatnonzero(mask > 0.5)
    gain = np.float32(1.0)
    if len(ids):
        ms = float(np.mean(energy[ids]))
        if ms > 0:
            dbfs = 10 * np.log10(ms)
            if dbfs < TARGET_DBFS:
                gain = np.float32(10 ** ((TARGET_DBFS - dbfs) / 10))
    return ids, gain


def _longest_first(pieces) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pieces [T_i, 40] zero-padded into one batch, longest first, so
    each call pads to little more than its own rows: (batch, lengths, order)."""
    order = np.argsort([-len(p) for p in pieces], kind="stable")
    lengths = np.array([len(pieces[o]) for o in order])
    batch = np.zeros((len(pieces), int(lengths[0]), N_MELS), dtype=np.float32)
    for row, o in enumerate(order):
        batch[row, : lengths[row]] = pieces[o]
    return batch, lengths, order


def resample_mask(mask: np.ndarray, frames: int) -> np.ndarray:
    """Nearest-neighbour resampling of a [F] mask onto ``frames`` frames, as
    torch's F.interpolate(mode="nearest") maps output i to input floor(i * F / frames)."""
    index = (np.arange(frames) * len(mask)) // max(frames, 1)
    return mask[np.minimum(index, len(mask) - 1)]


def waveform_batch(waveforms) -> np.ndarray:
    """float32 [batch, samples] from one waveform or a batch of them."""
    w = np.asarray(waveforms, dtype=np.float32)
    if w.ndim == 1:
        w = w[None]
    if w.ndim != 2:
        raise _core.OptionError("waveforms must be [batch, samples]")
    return w
