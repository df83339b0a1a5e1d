"""Diarization error rate, as pyannote.metrics defines it.

Follows ``pyannote.metrics.diarization.DiarizationErrorRate`` (read from its
source: ``utils.UEMSupportMixin.extrude`` and
``identification.IdentificationErrorRate.compute_components``):

- the evaluated region is ``uem`` (default: from the earliest to the latest
  turn of either side), less a collar of ``collar / 2`` seconds on each side
  of every reference turn boundary, less reference overlap if
  ``skip_overlap``;
- hypothesis speakers are mapped one-to-one onto reference speakers so that
  the total time they share is largest (Hungarian algorithm); pairs that
  share no time stay unmapped;
- the timeline is cut at every boundary; on each piece of duration ``d`` with
  ``n_ref`` reference and ``n_hyp`` hypothesis speakers, ``n_ok`` of which
  are mapped pairs both present::

      total       += d * n_ref
      missed      += d * max(0, n_ref - n_hyp)
      false_alarm += d * max(0, n_hyp - n_ref)
      confusion   += d * (min(n_ref, n_hyp) - n_ok)

  and ``der = (missed + false_alarm + confusion) / total``.

One deliberate difference: turns of one speaker that overlap each other are
merged first (pyannote would count that speaker twice there).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._internal.native import _core
from ..formats.rttm import Turn

Interval = tuple[float, float]


@dataclass(frozen=True)
class DERResult:
    """DER and its parts, in seconds; ``mapping`` is hypothesis -> reference."""

    der: float
    missed: float
    false_alarm: float
    confusion: float
    total: float
    mapping: dict = field(default_factory=dict)


def diarization_error_rate(
    reference: Iterable[Turn],
    hypothesis: Iterable[Turn],
    collar: float = 0.0,
    skip_overlap: bool = False,
    uem: Sequence[Interval] | None = None,
) -> DERResult:
    """DER of ``hypothesis`` turns against ``reference`` turns (see module doc).

    ``collar`` is the full width of the forgiven zone around each reference
    boundary (pyannote's convention; 0.25 means +-0.125 s). ``uem`` is a list
    of ``(start, end)`` regions to evaluate. Turns may also be given as
    ``(start, end, speaker)`` tuples.
    """
    ref = [_turn(t) for t in reference]
    hyp = [_turn(t) for t in hypothesis]
    if not (collar >= 0.0 and np.isfinite(collar)):
        raise _core.OptionError(f"collar must be a finite number >= 0, got {collar}")
    if uem is None:
        everything = ref + hyp
        uem = (
            [(min(t.start for t in everything), max(t.end for t in everything))]
            if everything
            else []
        )
    uem = [_interval(u, "uem region") for u in uem]
    collars = (
        [(t - collar / 2, t + collar / 2) for r in ref for t in (r.start, r.end)]
        if collar > 0
        else []
    )

    # Elementary pieces: between consecutive boundaries nothing changes.
    cuts = np.unique(
        [x for iv in [*uem, *collars] for x in iv]
        + [x for t in ref + hyp for x in (t.start, t.end)]
    )
    if cuts.size < 2:
        return DERResult(0.0, 0.0, 0.0, 0.0, 0.0, {})
    duration = np.diff(cuts)

    ref_labels, ref_active = _activity(ref, cuts)
    hyp_labels, hyp_active = _activity(hyp, cuts)
    evaluated = (_coverage(uem, cuts) > 0) & (_coverage(collars, cuts) == 0)
    n_ref = ref_active.sum(axis=0)
    if skip_overlap:
        evaluated &= n_ref < 2
    weight = np.where(evaluated, duration, 0.0)

    # Shared time of every (ref, hyp) pair over the evaluated region.
    shared = (ref_active * weight) @ hyp_active.T.astype(np.float64)
    pairs = [(r, h) for r, h in zip(*hungarian(-shared)) if shared[r, h] > 0]
    mapping = {hyp_labels[h]: ref_labels[r] for r, h in pairs}

    n_hyp = hyp_active.sum(axis=0)
    n_ok = np.zeros_like(n_ref)
    for r, h in pairs:
        n_ok += ref_active[r] & hyp_active[h]
    total = float(weight @ n_ref)
    missed = float(weight @ np.maximum(0, n_ref - n_hyp))
    false_alarm = float(weight @ np.maximum(0, n_hyp - n_ref))
    confusion = float(weight @ (np.minimum(n_ref, n_hyp) - n_ok))
    error = missed + false_alarm + confusion
    # pyannote's convention when there is no reference speech at all.
    der = error / total if total > 0 else (0.0 if error == 0 else 1.0)
    return DERResult(der, missed, false_alarm, confusion, total, mapping)


def _turn(t) -> Turn:
    if not isinstance(t, Turn):
        start, end, speaker = t
        t = Turn(float(start), float(end), str(speaker))
    _interval((t.start, t.end), f"turn {t}")
    return t


def _interval(iv, what: str) -> Interval:
    start, end = float(iv[0]), float(iv[1])
    if not (np.isfinite(start) and np.isfinite(end)) or end < start:
        raise _core.OptionError(f"{what}: start and end must be finite, end not before start")
    return start, end


def _coverage(intervals: Sequence[Interval], cuts: np.ndarray) -> np.ndarray:
    """How many intervals cover each piece between consecutive cuts."""
    delta = np.zeros(cuts.size, dtype=np.int64)
    if intervals:
        bounds = np.asarray(intervals, dtype=np.float64)
        # Every interval bound is itself a cut, so these indices are exact.
        np.add.at(delta, np.searchsorted(cuts, bounds[:, 0]), 1)
        np.add.at(delta, np.searchsorted(cuts, bounds[:, 1]), -1)
    return np.cumsum(delta)[:-1]


def _activity(turns: Sequence[Turn], cuts: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Speaker labels and a (speakers, pieces) boolean matrix of who talks."""
    labels = sorted({t.speaker for t in turns})
    active = np.zeros((len(labels), cuts.size - 1), dtype=bool)
    for i, label in enumerate(labels):
        # Overlapping turns of one speaker count once, hence the "> 0".
        active[i] = _coverage([(t.start, t.end) for t in turns if t.speaker == label], cuts) > 0
    return labels, active


def hungarian(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of a minimum-cost one-to-one assignment.

    The shortest-augmenting-path method with potentials (Kuhn-Munkres in
    O(n^2 m)); written here because saywho does not depend on SciPy. Every
    row of the smaller side gets a column.
    """
    cost = np.asarray(cost, dtype=np.float64)
    if cost.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if cost.shape[0] > cost.shape[1]:
        cols, rows = hungarian(cost.T)
        order = np.argsort(rows)
        return rows[order], cols[order]
    n, m = cost.shape
    # 1-based as in the textbook; index 0 is the virtual column/row.
    u = np.zeros(n + 1)
    v = np.zeros(m + 1)
    row_of = np.zeros(m + 1, dtype=np.int64)
    way = np.zeros(m + 1, dtype=np.int64)
    for i in range(1, n + 1):
        row_of[0] = i
        j0 = 0
        minv = np.full(m + 1, np.inf)
        used = np.zeros(m + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = row_of[j0]
            free = ~used[1:]
            reduced = cost[i0 - 1] - u[i0] - v[1:]
            better = free & (reduced < minv[1:])
            minv[1:][better] = reduced[better]
            way[1:][better] = j0
            candidates = np.where(free, minv[1:], np.inf)
            j1 = int(np.argmin(candidates)) + 1
            delta = candidates[j1 - 1]
            u[row_of[used]] += delta
            v[used] -= delta
            minv[1:][free] -= delta
            j0 = j1
            if row_of[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            row_of[j0] = row_of[j1]
            j0 = j1
    cols = np.nonzero(row_of[1:])[0]
    rows = row_of[1:][cols] - 1
    order = np.argsort(rows)
    return rows[order], cols[order]
