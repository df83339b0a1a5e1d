"""Turns a person would draw: no turn, and no pause inside one speaker's
speech, shorter than a floor.

The reconstruction picks speakers frame by frame (16.9 ms frames), so a
speaker can hold a single frame where the summed activations of two
clusters cross, and a turn can break for a frame where the count dips. A
person marking turns by ear draws neither. pyannote's Binarize has the two
floors under these names: ``min_duration_off`` fills each speaker's gaps
shorter than it, then ``min_duration_on`` removes that speaker's turns
shorter than it. pyannote 3.1's pipeline calls it with min_duration_on 0
and min_duration_off 0 (its config.yaml; community-1's too): no floor at all, which
is why its pipelines by name keep 0 and saywho's default sets its own
(diarize.py; the figures are in docs/diarization_quality.md).

The exclusive view (one speaker at a time, for words and subtitles) is
derived from the floored turns, so it never names a speaker where the turns
have none: each frame goes to the most active of the speakers the turns
hold there. Its own short runs (a speaker who wins a few frames of an
overlap) are then either grown to the floor inside that speaker's turn or
handed to the other speakers the turns hold there.
"""

from __future__ import annotations

import math

import numpy as np


def frames_for(seconds: float, step: float) -> int:
    """The fewest frames that last at least ``seconds`` once turn times are
    rounded to the millisecond (0 for no floor)."""
    if seconds <= 0:
        return 0
    # each end rounds by up to half a millisecond
    return math.ceil((seconds + 1e-3) / step - 1e-9)


def _runs(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of the True runs of a boolean column, ends exclusive."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], col.astype(np.int8), [0]])))
    return edges[::2], edges[1::2]


def apply_floor(binary: np.ndarray, min_on: int, min_off: int) -> np.ndarray:
    """[G, K] boolean speaker activity with, per speaker, every gap shorter
    than ``min_off`` frames between two of its runs filled, then every run
    shorter than ``min_on`` frames removed (pyannote's Binarize order)."""
    out = np.array(binary, dtype=bool, copy=True)
    for k in range(out.shape[1]):
        col = out[:, k]
        starts, ends = _runs(col)
        if min_off > 0 and len(starts) > 1:
            for end, start in zip(ends[:-1], starts[1:]):
                if start - end < min_off:
                    col[end:start] = True
            starts, ends = _runs(col)
        if min_on > 0:
            for start, end in zip(starts, ends):
                if end - start < min_on:
                    col[start:end] = False
    return out


def _label_runs(label: np.ndarray):
    """(start, end, label) of each run of equal labels."""
    cut = np.flatnonzero(np.diff(label)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [len(label)]])
    return [(int(a), int(b), int(label[a])) for a, b in zip(starts, ends)]


def _fix_short_run(label, binary, act, a, b, s, min_on) -> bool:
    """Grows speaker s's short run [a, b) to ``min_on`` frames where s's turn
    goes on around it, else hands its frames to the others speaking there.
    Returns whether anything changed."""
    need = min_on - (b - a)
    lo, hi = a, b
    while need > 0 and (lo > 0 and binary[lo - 1, s] or hi < len(label) and binary[hi, s]):
        # grow towards the side where s is the more active
        left = act[lo - 1, s] if lo > 0 and binary[lo - 1, s] else -np.inf
        right = act[hi, s] if hi < len(label) and binary[hi, s] else -np.inf
        if left >= right:
            lo -= 1
        else:
            hi += 1
        need -= 1
    if need <= 0:
        label[lo:hi] = s
        return True
    others = binary[a:b].copy()
    others[:, s] = False
    if others.any(axis=1).all():
        label[a:b] = np.argmax(np.where(others, act[a:b], -np.inf), axis=1)
        return True
    return False


def exclusive_from(binary: np.ndarray, act: np.ndarray, min_on: int) -> np.ndarray:
    """[G, K] boolean, at most one speaker per frame and only one the turns
    (``binary``) hold there: the most active of them (ties to the lower
    index); runs shorter than ``min_on`` frames are fixed where the turns
    allow (module docstring)."""
    frames, k = binary.shape
    held = binary.any(axis=1)
    label = np.where(held, np.argmax(np.where(binary, act, -np.inf), axis=1), -1)
    if min_on > 1 and frames:
        for _ in range(4 * k + 4):  # each pass fixes runs; a fix can shorten a neighbour
            changed = False
            for a, b, s in _label_runs(label):
                if s >= 0 and b - a < min_on:
                    changed |= _fix_short_run(label, binary, act, a, b, s, min_on)
            if not changed:
                break
    out = np.zeros((frames, k), dtype=bool)
    rows = np.flatnonzero(label >= 0)
    out[rows, label[rows]] = True
    return out
