"""Who spoke when: pyannote 3.1's speaker-diarization algorithm on saywho's core.

1. segmentation-3.0 over 10 s chunks every ``step`` seconds; each frame's most
   likely powerset class says which of 3 local speakers speak;
2. the instantaneous speaker count, averaged over overlapping chunks;
3. one embedding per (chunk, active local speaker), from the frames where
   that speaker speaks alone (all its frames when too few are clean);
4. agglomerative clustering of the embeddings of long enough speech, then
   every local speaker assigned to the nearest cluster centroid (with CAM++,
   the local speakers of one chunk to distinct ones: assignment.py);
5. reconstruction: each global speaker's activity summed over chunks, each
   frame keeping its ``count`` most active speakers, runs of frames as turns.

The exclusive view (one speaker at a time, for word alignment) repeats step 5
with the count capped at 1, as pyannote's ``exclusive_speaker_diarization``.

Chunks are processed in batches and only their binarised activity is kept
([chunks, 589, 3] bytes), so memory grows linearly and slowly with the
recording (docs/diarization.md has the figures).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._internal.memory import memory_report
from .._internal.native import _core
from .._internal.performance import Performance
from .._internal.runtime_user import RuntimeUser
from ..audio.decode import SAMPLE_RATE, load_audio
from ..formats.rttm import Turn, write_rttm
from ..models.torch_checkpoint import load_checkpoint, state_dict
from . import floor, reconstruct
from .anchors import split_by_anchors
from .assignment import assign_distinct
from .clustering import (
    DEFAULT_MIN_CLUSTER_SIZE,
    assign,
    cluster_embeddings,
)
from .cooccurrence import MIN_SOLO_SECONDS, split_cooccurring
from .count_bound import solo_frames, speakers_vouched_for
from .device_batch import batch_for
from .embedding_campp import SIGNATURE as CAMPP_SIGNATURE
from .embedding_campp import CamppEmbedding
from .embedding_campp import prepare as prepare_campp
from .embedding_ge2e import (
    HOP,
    GE2EEncoder,
    frame_energy,
    load_ge2e,
    resample_mask,
    select_frames,
)
from .embedding_resnet import ResNetEmbedding, load_resnet
from .reuse import match_anchor
from .segmentation import SegmentationModel, frame_timing, num_frames
from .speaker_counts import speaker_bounds

WINDOW = 10.0  # seconds: what segmentation-3.0 was trained on
MIN_EMBED_SECONDS = 0.5  # speech a (chunk, speaker) needs to join the clustering
MIN_EMBED_FRAMES = int(MIN_EMBED_SECONDS * SAMPLE_RATE) // HOP  # the same in 10 ms frames
# saywho's floors on turns and on pauses within a speaker (floor.py); chosen
# on the development set, docs/diarization_quality.md
MIN_DURATION_ON = 0.2
MIN_DURATION_OFF = 0.2

Progress = Callable[[str, int, int], None]


@dataclass
class Diarization:
    """Speaker turns (overlapping where people talk at once), the exclusive
    turns (one speaker at a time), and each speaker's centroid embedding."""

    turns: list[Turn]
    exclusive: list[Turn]
    speakers: list[str]
    embeddings: np.ndarray  # [speakers, dimension], in the order of ``speakers``
    duration: float
    performance: dict = field(default_factory=dict)

    def write_rttm(self, path: str | os.PathLike[str], uri: str = "audio") -> None:
        write_rttm(self.turns, path, uri)


def open_embedding(source, runtime):
    """The speaker encoder a checkpoint holds: 3D-Speaker's CAM++,
    resemblyzer's GE2E (LSTM) or pyannote's WeSpeaker ResNet34, told apart by
    their tensors' names."""
    name = os.fspath(source)
    checkpoint = load_checkpoint(name)
    for key in ("model_state", "state_dict"):
        if isinstance(checkpoint, dict) and key in checkpoint:
            checkpoint = checkpoint[key]
    tensors = state_dict(checkpoint)
    names = set(tensors)
    if CAMPP_SIGNATURE in names:
        return CamppEmbedding(prepare_campp(tensors, name), runtime)
    if "lstm.weight_ih_l0" in names:
        return GE2EEncoder(load_ge2e(name), runtime)
    if names & {"resnet.conv1.weight", "conv1.weight"}:
        return ResNetEmbedding(load_resnet(name), runtime)
    raise _core.ModelError(
        f"{name}: neither CAM++ (xvector.*), a GE2E encoder (lstm.*) nor a WeSpeaker "
        "ResNet34 (resnet.*) checkpoint"
    )


class Diarizer(RuntimeUser):
    """The two networks on one Runtime, and pyannote 3.1's settings.

    ``step`` is the chunk step in seconds (pyannote: a tenth of the window);
    ``threshold`` (default: the encoder's own, see clustering.py) and
    ``min_cluster_size`` drive the clustering, pyannote 3.1's AHC, unless
    ``clustering`` replaces it: a callable ``(embeddings [C, 3, D], activity
    [C, frames, 3], num, min, max) -> (cluster per local speaker [C, 3],
    centroids [K, D])`` such as vbx.VBxClustering.

    ``shared_front`` (CAM++ only) runs CAM++'s 2-D front once per frame
    instead of once per (chunk, speaker) sequence: CAM++ about a third
    faster, an approximation that moved DER (docs/diarization.md), so off
    by default.

    ``embedding_step`` (seconds, a multiple of ``step``; default ``step``,
    pyannote's own way) embeds every local speaker only in the chunks that
    lie that far apart; the chunks between them reuse the embedding of the
    speaker they continue (reuse.py). Not for GE2E.

    ``constrained_assignment`` gives the local speakers of one chunk distinct
    clusters after the AHC (assignment.py): less overlapped speech missed.
    Default: on for CAM++, off for the others (with GE2E it confused more
    where the count was not given); pyannote's 3.1 pipeline leaves it off,
    and so does open_pipeline.

    ``count_bound`` asks the clustering for at least as many speakers as the
    segmentation tells apart inside its chunks (count_bound.py): where all
    voices share one channel (a telephone call) the embeddings can lie too
    close for the threshold, the segmentation's local speakers do not.
    Default: on for CAM++, off for the others; never with a given count.

    ``split_cooccurring`` splits a cluster whose members are distinct local
    speakers of one chunk in many chunks (cooccurrence.py): two people the
    embeddings merged. Default: on for CAM++, off for the others; never
    with a given count.

    ``batch_size``: chunks per segmentation call (and per embedding pass);
    None: 16 on the CPU, 32 on a GPU where its free memory holds them
    (device_batch.py).

    ``min_duration_on`` / ``min_duration_off`` (seconds, pyannote's names):
    no turn shorter than the first, no pause inside one speaker's speech
    shorter than the second (floor.py). pyannote 3.1 uses 0 and 0 (no
    floor), and open_pipeline keeps those; saywho's defaults are
    MIN_DURATION_ON and MIN_DURATION_OFF (docs/diarization_quality.md).
    """

    _parts = ("segmentation", "embedding")

    def __init__(
        self,
        segmentation: str | os.PathLike[str],
        embedding: str | os.PathLike[str],
        runtime: _core.Runtime | None = None,
        step: float = 1.0,
        threshold: float | None = None,
        min_cluster_size: int = DEFAULT_MIN_CLUSTER_SIZE,
        batch_size: int | None = None,
        clustering: Callable | None = None,
        shared_front: bool = False,
        embedding_step: float | None = None,
        constrained_assignment: bool | None = None,
        count_bound: bool | None = None,
        min_duration_on: float = MIN_DURATION_ON,
        min_duration_off: float = MIN_DURATION_OFF,
        split_cooccurring: bool | None = None,
    ) -> None:
        if not 0 < step <= WINDOW:
            raise _core.OptionError(f"step must be in (0, {WINDOW}] seconds, not {step}")
        if round(step * SAMPLE_RATE) % HOP:
            raise _core.OptionError("step must be a multiple of 10 ms")
        for name, value in (
            ("min_duration_on", min_duration_on),
            ("min_duration_off", min_duration_off),
        ):
            if not (isinstance(value, (int, float)) and 0 <= value < WINDOW):
                raise _core.OptionError(f"{name} must be in [0, {WINDOW}) seconds, not {value!r}")
        self._use_runtime(runtime)
        self.segmentation = self.embedding = None
        with self._opening():
            batch_size = batch_for(self.runtime, batch_size)
            self.segmentation = SegmentationModel(segmentation, self.runtime, batch_size)
            self.embedding = open_embedding(embedding, self.runtime)
        if shared_front and not isinstance(self.embedding, CamppEmbedding):
            self.close()
            raise _core.OptionError("shared_front is for the CAM++ embedding only")
        self.shared_front = shared_front
        self.step = step
        self.every = self._embedding_every(step, embedding_step)
        # each encoder's embeddings have their own spread (clustering.py)
        self.threshold = threshold if threshold is not None else self.embedding.threshold
        self.min_cluster_size = min_cluster_size
        self.clustering = clustering
        # measured better with CAM++ only (docs/diarization_quality.md)
        if constrained_assignment is None:
            constrained_assignment = isinstance(self.embedding, CamppEmbedding)
        self.constrained_assignment = constrained_assignment
        # measured with CAM++ only (docs/diarization_quality.md, issue 25)
        if count_bound is None:
            count_bound = isinstance(self.embedding, CamppEmbedding)
        self.count_bound = count_bound
        # measured with CAM++ only (docs/diarization_quality.md, issue 39)
        if split_cooccurring is None:
            split_cooccurring = isinstance(self.embedding, CamppEmbedding)
        self.split_cooccurring = split_cooccurring
        self.batch_size = batch_size
        self.timing = frame_timing()
        self.min_duration_on = float(min_duration_on)
        self.min_duration_off = float(min_duration_off)

    def _embedding_every(self, step: float, embedding_step: float | None) -> int:
        """How many chunks apart the anchors lie (1: every chunk embeds)."""
        if embedding_step is None:
            return 1
        every = round(embedding_step / step) if step > 0 else 0
        if every < 1 or abs(every * step - embedding_step) > 1e-6 or embedding_step > WINDOW:
            self.close()
            raise _core.OptionError(
                f"embedding_step must be a multiple of step ({step} s) up to {WINDOW} s, "
                f"not {embedding_step}"
            )
        if every > 1 and isinstance(self.embedding, GE2EEncoder):
            self.close()
            raise _core.OptionError("embedding_step is not for the GE2E embedding")
        return every

    # -- the stages -----------------------------------------------------------
    def _chunk_starts(self, n: int) -> np.ndarray:
        window, hop = int(WINDOW * SAMPLE_RATE), round(self.step * SAMPLE_RATE)
        whole = (n - window) // hop + 1 if n >= window else 0
        partial = n < window or (n - window) % hop > 0
        return np.arange(whole + int(partial), dtype=np.int64) * hop

    def _batches(self, audio: np.ndarray, starts: np.ndarray):
        """Chunks [b, window] (zero-padded past the end), a batch at a time,
        with the audio span they cover (for the mel frames)."""
        window = int(WINDOW * SAMPLE_RATE)
        for i in range(0, len(starts), self.batch_size):
            s = starts[i : i + self.batch_size]
            lo, hi = int(s[0]), int(s[-1]) + window
            span = audio[lo:hi]
            if len(span) < hi - lo:
                span = np.concatenate([span, np.zeros(hi - lo - len(span), np.float32)])
            chunks = np.lib.stride_tricks.sliding_window_view(span, window)[s - lo]
            yield i, s, span, np.ascontiguousarray(chunks)

    def _segment_and_embed(self, audio, starts, progress):
        frames = num_frames(int(WINDOW * SAMPLE_RATE))
        active = np.zeros((len(starts), frames, 3), dtype=np.uint8)
        embeddings = np.full((len(starts), 3, self.embedding.dimension), np.nan, np.float32)
        trainable = np.zeros((len(starts), 3), dtype=bool)
        seconds = {"segmentation": 0.0, "embeddings": 0.0}
        for i, s, span, chunks in self._batches(audio, starts):
            with self._span_on_device(span) as shared:
                self._segment_and_embed_batch(
                    i, s, span, chunks, shared, active, embeddings, trainable, seconds
                )
            if progress:
                passes = 1 if self.every == 1 or isinstance(self.embedding, GE2EEncoder) else 2
                progress("diarization", min(i + len(s), len(starts)), passes * len(starts))
        if self.every > 1:
            t0 = time.perf_counter()
            self._embed_reusing(audio, starts, active, embeddings, trainable, progress)
            seconds["embeddings"] += time.perf_counter() - t0
        return active, embeddings, trainable, seconds

    def _span_on_device(self, span):
        """A ``_core.AudioSpan`` of the batch's span where both networks
        read it on the device (a GPU: segmentation's SincNet, and CAM++'s
        fbank or GE2E's mels), so that it goes up once a batch, not once a
        network; else nothing to share (a context that gives None)."""
        ge2e = isinstance(self.embedding, GE2EEncoder) and self.embedding.mels_on_device()
        campp = (
            isinstance(self.embedding, CamppEmbedding)
            and self.every == 1
            and not self.shared_front
            and self.embedding._model.features_on_device()
        )
        shares = self.runtime.device != "cpu" and (ge2e or campp)
        if not shares:
            return contextlib.nullcontext(None)
        return _core.AudioSpan(self.runtime, {"samples": np.ascontiguousarray(span, np.float32)})

    def _segment_and_embed_batch(
        self, i, s, span, chunks, shared, active, embeddings, trainable, seconds
    ):
        """One batch of chunks: their segmentation and, unless the
        embeddings wait for every chunk (embedding_step), their embeddings."""
        t0 = time.perf_counter()
        # the chunks are the span's (offsets on the 10 ms grid): SincNet's
        # first convolution once over the span
        logp = self.segmentation.run_span(span, s - s[0], chunks.shape[1], shared)
        act = reconstruct.binarize_powerset(logp)
        active[i : i + len(s)] = act
        t1 = time.perf_counter()
        if isinstance(self.embedding, GE2EEncoder):
            self._embed_ge2e(span, s, act, i, embeddings, trainable, shared)
        elif self.every == 1:
            self._embed_generic(chunks, act, i, embeddings, trainable, span, s, shared)
        else:
            # with embedding_step the embeddings wait for every chunk's
            # segmentation (a chunk may reuse the next anchor's); which
            # speakers may be reused is known now
            trainable[i : i + len(s)] = self._masks(act)[1]
        seconds["segmentation"] += t1 - t0
        seconds["embeddings"] += time.perf_counter() - t1

    def _embed_ge2e(self, span, starts, act, first, embeddings, trainable, shared=None):
        """GE2E's embeddings of a batch of chunks (rows ``first`` on of
        ``embeddings`` and ``trainable``): each local speaker from its clean
        frames of the span's mel, or all its frames when too few are clean.
        Where the device makes the mels, the span goes up instead of them
        (``_embed_ge2e_on_device``)."""
        if self.embedding.mels_on_device():
            return self._embed_ge2e_on_device(
                span, starts, act, first, embeddings, trainable, shared
            )
        mel_frames = int(WINDOW * SAMPLE_RATE) // HOP
        mel, energy = self.embedding.features(span)
        sequences, owners = [], []
        clean = act * (act.sum(axis=2, keepdims=True) < 2)
        for b, start in enumerate(starts):
            offset = (int(start) - int(starts[0])) // HOP
            m, e = mel[offset : offset + mel_frames], energy[offset : offset + mel_frames]
            for j in range(3):
                if not act[b, :, j].any():
                    continue
                mask = resample_mask(clean[b, :, j].astype(np.float32), len(m))
                if mask.sum() < MIN_EMBED_FRAMES:  # too little clean speech: use it all
                    mask = resample_mask(act[b, :, j].astype(np.float32), len(m))
                seq = self.embedding.select(m, e, mask)
                trainable[first + b, j] = len(seq) >= MIN_EMBED_FRAMES
                sequences.append(seq)
                owners.append((first + b, j))
        if sequences:
            emb = self.embedding.embed_sequences(sequences)
            for (c, j), row in zip(owners, emb):
                embeddings[c, j] = row

    def _embed_ge2e_on_device(self, span, starts, act, first, embeddings, trainable, shared):
        """``_embed_ge2e`` choosing the same frames and gains on the host
        (from the samples' energy, no mels there), the mels made from the
        span on the device (GE2EEncoder.embed_span)."""
        mel_frames = int(WINDOW * SAMPLE_RATE) // HOP
        total = len(span) // HOP  # the span's mel frames (audio/mel.c's count)
        energy = frame_energy(np.ascontiguousarray(span, np.float32), total)
        sequences, owners = [], []
        clean = act * (act.sum(axis=2, keepdims=True) < 2)
        for b, start in enumerate(starts):
            offset = (int(start) - int(starts[0])) // HOP
            count = max(0, min(mel_frames, total - offset))
            e = energy[offset : offset + count]
            for j in range(3):
                if not act[b, :, j].any():
                    continue
                mask = resample_mask(clean[b, :, j].astype(np.float32), count)
                if mask.sum() < MIN_EMBED_FRAMES:  # too little clean speech: use it all
                    mask = resample_mask(act[b, :, j].astype(np.float32), count)
                ids, gain = select_frames(e, mask)
                trainable[first + b, j] = len(ids) >= MIN_EMBED_FRAMES
                sequences.append((offset + ids, gain))
                owners.append((first + b, j))
        if sequences:
            emb = self.embedding.embed_span(span, sequences, shared)
            for (c, j), row in zip(owners, emb):
                embeddings[c, j] = row

    def _masks(self, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What each local speaker is embedded from: its clean frames (no one
        else speaking), or all its frames when too few are clean; [B, 3,
        frames] float32. And whether that is enough speech to be clustered."""
        clean = act * (act.sum(axis=2, keepdims=True) < 2)
        frames_needed = MIN_EMBED_FRAMES * act.shape[1] / (WINDOW * SAMPLE_RATE / HOP)
        use_clean = clean.sum(axis=1) >= frames_needed  # [B, 3]
        masks = np.where(use_clean[:, None, :], clean, act).transpose(0, 2, 1)
        masks = masks.astype(np.float32)
        return masks, masks.sum(axis=2) >= frames_needed

    def _embed_generic(self, chunks, act, first, embeddings, trainable, span, starts, shared=None):
        """Any encoder with ``embed_speakers(chunks, masks [B, 3, frames])``
        (CAM++, the ResNet), each speaker from ``_masks``. CAM++ takes the
        chunks as offsets in their span instead."""
        masks, enough = self._masks(act)
        n = len(chunks)
        embeddings[first : first + n] = self._embed_masks(chunks, masks, span, starts, shared)
        trainable[first : first + n] = enough

    def _embed_reusing(self, audio, starts, active, embeddings, trainable, progress):
        """The embeddings once every chunk is segmented (and ``trainable``
        filled from its activity), with ``embedding_step``:
        anchors (every ``self.every``-th chunk) embed all their speakers; a
        speaker between anchors that continues a speaker of the anchor before
        and/or after it (reuse.py) takes that embedding, or the mean of the
        two, and is embedded itself otherwise."""
        offsets = reconstruct.chunk_frame_offsets(starts / SAMPLE_RATE, self.timing)
        links: list[tuple[int, int, list[tuple[int, int]]]] = []
        for i, s, span, chunks in self._batches(audio, starts):
            masks, _ = self._masks(active[i : i + len(s)])
            for b in range(len(s)):
                c = i + b
                if c % self.every == 0:
                    continue
                prev = c - c % self.every
                found = [[] for _ in range(3)]
                for a in (prev, prev + self.every):
                    if a >= len(starts):
                        continue
                    shift = int(offsets[c] - offsets[a])
                    match = match_anchor(active[c], active[a], shift)
                    for j in range(3):
                        if match[j] >= 0 and trainable[a, match[j]]:
                            found[j].append((a, int(match[j])))
                for j in range(3):
                    if found[j] and masks[b, j].any():
                        links.append((c, j, found[j]))
                        masks[b, j] = 0.0
            embeddings[i : i + len(s)] = self._embed_masks(chunks, masks, span, s)
            if progress:
                progress("diarization", len(starts) + min(i + len(s), len(starts)), 2 * len(starts))
        for c, j, sources in links:
            # a clustered anchor speaker has an embedding: half a second of
            # speech is far more than any encoder's least
            embeddings[c, j] = np.mean([embeddings[a, k] for a, k in sources], axis=0)
        if not np.isfinite(embeddings[trainable]).all():
            raise _core.ModelError("an embedding is missing for speech long enough to cluster")

    def _embed_masks(self, chunks, masks, span, starts, shared=None):
        if isinstance(self.embedding, CamppEmbedding):
            offsets = np.asarray(starts, np.int64) - int(starts[0])
            return self.embedding.embed_speakers_in_span(
                span,
                offsets,
                chunks.shape[1],
                masks,
                shared_front=self.shared_front,
                on_device=shared,
            )
        return self.embedding.embed_speakers(chunks, masks)

    def __call__(
        self,
        audio,
        num_speakers: int | None = None,
        min_speakers: int | None = None,
        max_speakers: int | None = None,
        progress: Progress | None = None,
        anchors: np.ndarray | None = None,
        anchor_threshold: float | None = None,
    ) -> Diarization:
        """Who spoke when in ``audio`` (a path or 16 kHz mono samples).

        ``anchors`` [voices, dimension]: embeddings of known voices (by this
        Diarizer's embedding) that the clustering keeps apart wherever each
        is heard, at cosine ``anchor_threshold`` (anchors.py); not with a
        given count, nor with a pipeline's own clustering (VBx)."""
        if self.closed:
            raise _core.ModelError("this Diarizer is closed")
        num, lo, hi = speaker_bounds(num_speakers, min_speakers, max_speakers)
        t_start = time.perf_counter()
        x = load_audio(audio) if isinstance(audio, (str, os.PathLike)) else audio
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        duration = len(x) / SAMPLE_RATE
        perf = Performance(duration, t_start)
        perf.add("decode", time.perf_counter() - t_start)
        empty = Diarization(
            [], [], [], np.zeros((0, self.embedding.dimension), np.float32), duration
        )
        if len(x) == 0:
            empty.performance = perf.report(0, memory_report(self.runtime))
            return empty
        starts = self._chunk_starts(len(x))
        active, embeddings, trainable, seconds = self._segment_and_embed(x, starts, progress)
        if anchors is not None:
            anchors = np.asarray(anchors, dtype=np.float32)
            if anchors.ndim != 2 or anchors.shape[1] != self.embedding.dimension:
                raise _core.OptionError(
                    f"anchors must be [voices, {self.embedding.dimension}] embeddings, "
                    f"not of shape {anchors.shape}"
                )
            if anchor_threshold is None:
                raise _core.OptionError("anchors need an anchor_threshold")
        return self.from_chunks(
            active=active,
            embeddings=embeddings,
            trainable=trainable,
            starts=starts,
            duration=duration,
            num=num,
            lo=lo,
            hi=hi,
            seconds=seconds,
            perf=perf,
            anchors=(anchors, anchor_threshold) if anchors is not None else None,
        )

    def from_chunks(
        self,
        *,  # eleven values, several of one type: by name only
        active,
        embeddings,
        trainable,
        starts,
        duration,
        num,
        lo,
        hi,
        seconds,
        perf,
        anchors=None,
    ) -> Diarization:
        """The clustering and reconstruction over the chunks' local speakers
        (what __call__ does after the networks; a bench re-runs it on saved
        chunks with other settings)."""
        empty = Diarization(
            [], [], [], np.zeros((0, self.embedding.dimension), np.float32), duration
        )
        t0 = time.perf_counter()
        offsets = reconstruct.chunk_frame_offsets(starts / SAMPLE_RATE, self.timing)
        total = int(offsets[-1]) + active.shape[1]
        count = reconstruct.speaker_count(active, offsets, total)
        if count.max() == 0:
            empty.performance = self._performance(perf, seconds)
            return empty
        is_active = active.any(axis=1)  # [C, 3]
        train = is_active & trainable
        hard = np.full(is_active.shape, -2, dtype=np.int64)
        if self.clustering is not None and hi >= 2:
            # e.g. community-1's VBx: it picks its own training embeddings
            found, centroids = self.clustering(embeddings, active, num, lo, hi)
            hard[is_active] = found[is_active]
        elif hi < 2 or not train.any():
            hard[is_active] = 0
            centroids = np.nanmean(embeddings[is_active], axis=0, keepdims=True)
        else:
            if num is None and self.count_bound:
                # the segmentation's own distinct voices: the fewest there are
                lo = max(lo, min(speakers_vouched_for(active, trainable, self.timing.step), hi))
            found = cluster_embeddings(
                embeddings[train],
                threshold=self.threshold,
                min_cluster_size=self.min_cluster_size,
                num_clusters=num,
                min_clusters=lo,
                max_clusters=hi,
            )
            centroids = found.centroids
            labels = found.labels
            if num is None and self.split_cooccurring:
                labels = self._split_cooccurring(active, train, embeddings, labels, hi)
                centroids = np.stack(
                    [embeddings[train][labels == c].mean(axis=0) for c in range(labels.max() + 1)]
                )
            if anchors is not None and num is None:
                labels = split_by_anchors(embeddings[train], labels, *anchors)
                if labels.max() + 1 <= hi:
                    centroids = np.stack(
                        [
                            embeddings[train][labels == c].mean(axis=0)
                            for c in range(labels.max() + 1)
                        ]
                    )
            if self.constrained_assignment:
                hard = assign_distinct(embeddings, is_active, centroids)
            else:
                hard[is_active] = assign(embeddings[is_active], centroids)
                hard[is_active & (hard < 0)] = 0  # no embedding at all: the first speaker
        if math.isfinite(hi) and hi < np.iinfo(count.dtype).max:
            # (a bound above the count's type cannot lower it: 128 speakers overflowed int8)
            count = np.minimum(count, np.asarray(hi, count.dtype))
        seconds["clustering"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        k = len(centroids)
        act = reconstruct.activations(active, hard, offsets, total, k)
        binary = reconstruct.select_speakers(act, count)
        step = self.timing.step
        min_on = floor.frames_for(self.min_duration_on, step)
        binary = floor.apply_floor(binary, min_on, floor.frames_for(self.min_duration_off, step))
        if min_on or self.min_duration_off:
            exclusive = floor.exclusive_from(binary, act, min_on)
        else:  # pyannote's own exclusive view, where it sets no floor
            exclusive = reconstruct.select_speakers(act, np.minimum(count, 1))
        used = [c for c in range(k) if binary[:, c].any()]
        labels = [""] * k
        for n, c in enumerate(used):
            labels[c] = f"SPEAKER_{n:02d}"
        turns, excl = (
            [
                t
                for t in reconstruct.to_turns(
                    view, self.timing, labels, duration, self.min_duration_on
                )
                if t.speaker
            ]
            for view in (binary, exclusive)
        )
        seconds["reconstruction"] = time.perf_counter() - t0
        return Diarization(
            turns,
            excl,
            [labels[c] for c in used],
            np.asarray(centroids, np.float32)[used],
            duration,
            self._performance(perf, seconds),
        )

    def _split_cooccurring(self, active, train, embeddings, labels, hi):
        """cooccurrence.py over the training embeddings: which chunk each
        comes from, whether it speaks alone long enough there."""
        alone = solo_frames(active) * self.timing.step
        solo = alone >= MIN_SOLO_SECONDS
        n = int(train.sum())
        min_size = min(self.min_cluster_size, max(1, round(0.1 * n)))
        return split_cooccurring(
            embeddings[train], labels, np.nonzero(train)[0], solo[train], min_size, hi
        )

    def _performance(self, perf: Performance, seconds: dict) -> dict:
        """saywho._internal.performance's shape; the pool's peak so far where the
        runtime counts it (Pipeline.diarize replaces it with its checkpoint's)."""
        for name, spent in seconds.items():
            perf.add(name, spent)
        report = memory_report(self.runtime)
        return perf.report(report.peak_allocated, report)
