"""From per-chunk local speakers to global speaker turns, as pyannote 3.1 does.

Every chunk's frames land on one global frame grid (the segmentation's
frame step; chunk c's frame i is global frame round(start_c / step) + i).
The instantaneous speaker count is the average over overlapping chunks of
how many local speakers are active, rounded; each global speaker's
activation is the sum over chunks of its local speakers' activity; each
frame keeps its ``count`` most active speakers. Runs of active frames become
turns from the middle of their first frame to the middle of the frame after
their last, as pyannote's Binarize reads frame times.

Everything here is a pass over chunks that adds into arrays as long as the
grid, so memory grows linearly with the recording.
"""

from __future__ import annotations

import numpy as np

from ..formats.rttm import Turn
from .segmentation import FrameTiming

# segmentation-3.0's powerset classes -> which of the 3 local speakers speak
POWERSET = np.array(
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.uint8
)


def binarize_powerset(log_probs: np.ndarray) -> np.ndarray:
    """[C, F, 7] log-probabilities -> [C, F, 3] uint8: the most likely class's speakers."""
    return POWERSET[np.argmax(log_probs, axis=-1)]


def chunk_frame_offsets(starts: np.ndarray, timing: FrameTiming) -> np.ndarray:
    """Global frame index of each chunk's first frame."""
    return np.rint(np.asarray(starts) / timing.step).astype(np.int64)


def speaker_count(active: np.ndarray, offsets: np.ndarray, total: int) -> np.ndarray:
    """[G] instantaneous count: mean over the chunks covering a frame of its
    number of active local speakers, rounded half to even (0 where no chunk)."""
    frames = active.shape[1]
    summed = np.zeros(total, dtype=np.float64)
    covered = np.zeros(total, dtype=np.float64)
    for c, off in enumerate(offsets):
        summed[off : off + frames] += active[c].sum(axis=1, dtype=np.uint8)
        covered[off : off + frames] += 1.0
    return np.rint(summed / np.maximum(covered, 1.0)).astype(np.int8)


def activations(
    active: np.ndarray, hard: np.ndarray, offsets: np.ndarray, total: int, speakers: int
) -> np.ndarray:
    """[G, K] summed activity of each global speaker; local speakers of one
    chunk that share a cluster count once (their maximum). hard[c, j] is the
    cluster of local speaker j in chunk c, negative when it has none."""
    frames = active.shape[1]
    out = np.zeros((total, max(speakers, 1)), dtype=np.float32)
    for c, off in enumerate(offsets):
        chunk = np.zeros((frames, out.shape[1]), dtype=np.float32)
        for j, k in enumerate(hard[c]):
            if k >= 0:
                np.maximum(chunk[:, k], active[c, :, j], out=chunk[:, k])
        out[off : off + frames] += chunk
    return out


def select_speakers(act: np.ndarray, count: np.ndarray) -> np.ndarray:
    """[G, K] binary: each frame's ``count`` most active speakers (ties to the
    lower index). Speakers with no activation at a frame are never chosen.

    The rank of speaker k is how many speakers beat it; counted with K
    passes over the frames, it needs a byte per (frame, speaker) where an
    argsort would need sixteen (a 4-hour file has 850,000 frames)."""
    frames, k = act.shape
    chosen = np.zeros((frames, k), dtype=bool)
    for i in range(k):
        rank = np.zeros(frames, dtype=np.int16)
        for j in range(k):
            if j != i:
                rank += act[:, j] > act[:, i] if j > i else act[:, j] >= act[:, i]
        chosen[:, i] = (rank < count) & (act[:, i] > 0)
    return chosen


def to_turns(
    binary: np.ndarray,
    timing: FrameTiming,
    labels: list[str],
    duration: float,
    min_duration: float = 0.0,
) -> list[Turn]:
    """Runs of active frames -> turns sorted by start, then speaker; nothing
    past ``duration`` (the last chunk's zero padding is not audio), and no
    turn shorter than ``min_duration`` (a run the end of the audio cuts
    short; floor.py keeps the others long enough)."""
    turns = []
    last = len(binary) - 1
    for k, label in enumerate(labels):
        col = np.concatenate([[0], binary[:, k].astype(np.int8), [0]])
        edges = np.flatnonzero(np.diff(col))
        for a, b in zip(edges[::2], edges[1::2]):
            start = float(timing.center(a))
            end = min(float(timing.center(min(b, last))), duration)
            if end > start and end - start >= min_duration - 1e-9:
                turns.append(Turn(round(start, 3), round(end, 3), label))
    turns.sort(key=lambda t: (t.start, t.speaker))
    return turns
